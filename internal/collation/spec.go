package collation

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// locales are the locale ids MongoDB 7.0 documents as supported (ICU locale
// ids), without variants.
var locales = func() map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Fields(`af sq am ar hy as az bn be bs bs_Cyrl bg my ca chr zh zh_Hant hr cs da nl dz
		en en_US en_US_POSIX eo et ee fo fil fi fr fr_CA gl ka de de_AT el gu ha haw he hi hu is ig smn id ga it ja
		kl kn kk km kok ko ky lk lo lv li lt dsb lb mk ms ml mt mr mn ne se nb nn or om ps fa fa_AF pl pt pa ro ru
		sr sr_Latn si sk sl es sw sv ta te th bo to tr uk hsb ur ug vi wae cy yi yo zu`) {
		m[l] = true
	}
	return m
}()

// parseSpec reads and validates a collation document into a normalized
// spec; simple is true for {locale: "simple"}. Codes and messages follow
// MongoDB's collator factory.
func parseSpec(d bsoncore.Document) (spec Spec, simple bool, err error) {
	elems, err := d.Elements()
	if err != nil {
		return spec, false, mongoerr.New(mongoerr.FailedToParse, "collation is not a valid document: %v", err)
	}
	lv, err := d.LookupErr("locale")
	if err != nil {
		return spec, false, mongoerr.New(mongoerr.NoSuchKey, "Missing expected field \"locale\"")
	}
	locale, ok := lv.StringValueOK()
	if !ok {
		return spec, false, mongoerr.New(mongoerr.TypeMismatch, "\"locale\" had the wrong type. Expected string, found %s", typeName(lv.Type))
	}
	if strings.IndexByte(locale, 0) >= 0 {
		return spec, false, mongoerr.New(mongoerr.BadValue, "Field 'locale' cannot contain null byte. Collation spec: %s", d)
	}
	if locale == "simple" {
		if len(elems) > 1 {
			return spec, false, mongoerr.New(mongoerr.FailedToParse, "If locale=simple, no other fields should be present in: %s", d)
		}
		return spec, true, nil
	}
	if locale == "" {
		return spec, false, mongoerr.New(mongoerr.BadValue, "Field 'locale' cannot be the empty string in: %s", d)
	}
	if base, variant, ok := strings.Cut(locale, "@"); ok && locales[base] && strings.HasPrefix(variant, "collation=") {
		return spec, false, mongoerr.New(mongoerr.InvalidOptions, "collation variant %q is not supported: Cairn's collation library (golang.org/x/text/collate) implements the base locales only", locale)
	}
	if !locales[locale] {
		return spec, false, mongoerr.New(mongoerr.BadValue, "Field 'locale' is invalid in: %s", d)
	}
	spec = Spec{Locale: locale, CaseFirst: "off", Strength: 3, Alternate: "non-ignorable", MaxVariable: "punct"}
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch k {
		case "locale":
		case "caseLevel":
			spec.CaseLevel, err = boolField(k, v)
		case "numericOrdering":
			spec.NumericOrdering, err = boolField(k, v)
		case "normalization":
			spec.Normalization, err = boolField(k, v)
		case "backwards":
			spec.Backwards, err = boolField(k, v)
		case "strength":
			n, ok := v.AsInt64OK()
			if !ok {
				return spec, false, mongoerr.New(mongoerr.TypeMismatch, "\"strength\" had the wrong type. Expected number, found %s", typeName(v.Type))
			}
			if n < 1 || n > 5 {
				return spec, false, mongoerr.New(mongoerr.FailedToParse, "Field 'strength' must be an integer 1 through 5. Got: %d", n)
			}
			spec.Strength = int(n)
		case "caseFirst":
			spec.CaseFirst, err = enumField(k, v, "upper", "lower", "off")
		case "alternate":
			spec.Alternate, err = enumField(k, v, "non-ignorable", "shifted")
		case "maxVariable":
			spec.MaxVariable, err = enumField(k, v, "punct", "space")
		case "version":
			ver, ok := v.StringValueOK()
			if !ok {
				return spec, false, mongoerr.New(mongoerr.TypeMismatch, "\"version\" had the wrong type. Expected string, found %s", typeName(v.Type))
			}
			if ver != Version {
				return spec, false, mongoerr.New(mongoerr.IncompatibleCollationVer, "Requested collation version %s but the only available collator version was %s. Requested collation spec: %s", ver, Version, d)
			}
		default:
			return spec, false, mongoerr.New(mongoerr.FailedToParse, "Collation spec contains unknown field. Collation spec: %s", d)
		}
		if err != nil {
			return spec, false, err
		}
	}
	if spec.Backwards && spec.Strength == 1 {
		return spec, false, mongoerr.New(mongoerr.BadValue, "'backwards' is invalid with 'strength' of 1 in: %s", spec.Document())
	}
	if spec.CaseFirst != "off" && !spec.CaseLevel && spec.Strength <= 2 {
		return spec, false, mongoerr.New(mongoerr.BadValue, "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: %s", spec.Document())
	}
	if spec.Alternate == "shifted" && spec.MaxVariable == "space" {
		return spec, false, mongoerr.New(mongoerr.InvalidOptions, "maxVariable \"space\" with alternate \"shifted\" is not supported: Cairn's collation library (golang.org/x/text/collate) shifts punctuation and spaces alike")
	}
	return spec, false, nil
}

func boolField(k string, v bsoncore.Value) (bool, error) {
	b, ok := v.BooleanOK()
	if !ok {
		return false, mongoerr.New(mongoerr.TypeMismatch, "\"%s\" had the wrong type. Expected bool, found %s", k, typeName(v.Type))
	}
	return b, nil
}

func enumField(k string, v bsoncore.Value, allowed ...string) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.TypeMismatch, "\"%s\" had the wrong type. Expected string, found %s", k, typeName(v.Type))
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", mongoerr.New(mongoerr.FailedToParse, "Field '%s' must be '%s'. Got: %s", k, strings.Join(allowed, "', '"), s)
}

func typeName(t bsoncore.Type) string { return bsonx.TypeName(t) }
