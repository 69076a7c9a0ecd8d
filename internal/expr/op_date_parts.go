package expr

import (
	"math"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Date part operators: $year $month $dayOfMonth $hour $minute $second
// $millisecond $dayOfWeek $dayOfYear $week $isoWeek $isoWeekYear
// $isoDayOfWeek, and $dateToParts / $dateFromParts. Each part operator takes
// a date expression, a one-element array of it, or {date, timezone}; a null
// or missing date or timezone gives null.

func init() {
	for name, part := range map[string]func(time.Time) int64{
		"$year":         func(t time.Time) int64 { return int64(t.Year()) },
		"$month":        func(t time.Time) int64 { return int64(t.Month()) },
		"$dayOfMonth":   func(t time.Time) int64 { return int64(t.Day()) },
		"$hour":         func(t time.Time) int64 { return int64(t.Hour()) },
		"$minute":       func(t time.Time) int64 { return int64(t.Minute()) },
		"$second":       func(t time.Time) int64 { return int64(t.Second()) },
		"$millisecond":  func(t time.Time) int64 { return int64(t.Nanosecond() / 1e6) },
		"$dayOfWeek":    func(t time.Time) int64 { return int64(t.Weekday()) + 1 },
		"$dayOfYear":    func(t time.Time) int64 { return int64(t.YearDay()) },
		"$week":         func(t time.Time) int64 { return int64(dateWeek(t)) },
		"$isoWeek":      func(t time.Time) int64 { _, w := t.ISOWeek(); return int64(w) },
		"$isoDayOfWeek": func(t time.Time) int64 { return int64(isoWeekday(t)) },
	} {
		register(name, parseDatePart(name, part, false))
	}
	// MongoDB's TimeZone::isoYear is a long long, so $isoWeekYear alone
	// returns a long ($dateToParts' isoWeekYear is an int).
	register("$isoWeekYear", parseDatePart("$isoWeekYear", func(t time.Time) int64 { y, _ := t.ISOWeek(); return int64(y) }, true))
	register("$dateToParts", parseDateToParts)
	register("$dateFromParts", parseDateFromParts)
}

// MongoDB's codes for the date part operators.
const (
	codeDatePartUnknownArg   = mongoerr.DatePartUnknownArg
	codeDatePartArrayArgs    = mongoerr.DatePartArrayArgs
	codeDatePartMissingDate  = mongoerr.DatePartMissingDate
	codeToPartsNotObject     = mongoerr.ToPartsNotObject
	codeToPartsUnknownArg    = mongoerr.ToPartsUnknownArg
	codeToPartsMissingDate   = mongoerr.ToPartsMissingDate
	codeToPartsISOType       = mongoerr.ToPartsISOType
	codeFromPartsNotObject   = mongoerr.FromPartsNotObject
	codeFromPartsUnknownArg  = mongoerr.FromPartsUnknownArg
	codeFromPartsNoYear      = mongoerr.FromPartsNoYear
	codeFromPartsMixNatural  = mongoerr.FromPartsMixNatural
	codeFromPartsMixISO      = mongoerr.FromPartsMixISO
	codeFromPartsNotInteger  = mongoerr.FromPartsNotInteger
	codeFromPartsPartRange   = mongoerr.FromPartsPartRange
	codeFromPartsYearRange   = mongoerr.FromPartsYearRange
	codeFromPartsISOYearRang = mongoerr.FromPartsISOYearRange
)

// isoWeekday is Monday 1 … Sunday 7.
func isoWeekday(t time.Time) int {
	if d := int(t.Weekday()); d != 0 {
		return d
	}
	return 7
}

// dateWeek is $week and %U: the week of the year, weeks starting on
// Sunday, days before the first Sunday in week 0.
func dateWeek(t time.Time) int {
	prevSunday := t.YearDay() - (int(t.Weekday()) + 1)
	return (prevSunday + 7) / 7
}

type datePartExpr struct {
	date, tz Expr
	part     func(time.Time) int64
	long     bool // the result is an int64, not an int32
}

func parseDatePart(op string, part func(time.Time) int64, long bool) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		e := datePartExpr{part: part, long: long}
		switch {
		case arg.Type == bsoncore.TypeEmbeddedDocument && !isOperatorObject(arg):
			it := elemsOf(arg)
			for {
				k, v, ok := it.next()
				if !ok {
					break
				}
				x, err := ParseIn(v, s)
				if err != nil {
					return nil, err
				}
				switch string(k) {
				case "date":
					e.date = x
				case "timezone":
					e.tz = x
				default:
					return nil, errorf(codeDatePartUnknownArg, "unrecognized option to %s: \"%s\"", op, k)
				}
			}
			if err := checkConstantZone(e.tz); err != nil {
				return nil, err
			}
			if e.date == nil {
				return nil, errorf(codeDatePartMissingDate, "missing 'date' argument to %s, provided: %s", op, bsoncore.Document(arg.Data))
			}
		case arg.Type == bsoncore.TypeArray:
			args, err := parseArgs(arg, s)
			if err != nil {
				return nil, err
			}
			if len(args) != 1 {
				return nil, errorf(codeDatePartArrayArgs, "%s accepts exactly one argument if given an array, but was given %d", op, len(args))
			}
			e.date = args[0]
		default:
			x, err := ParseIn(arg, s)
			if err != nil {
				return nil, err
			}
			e.date = x
		}
		return e, nil
	}
}

// isOperatorObject reports whether a document's first field names an
// operator ({$add: …}) rather than an argument ({date: …}).
func isOperatorObject(v bsoncore.Value) bool {
	it := elemsOf(v)
	k, _, ok := it.next()
	return ok && len(k) > 0 && k[0] == '$'
}

func (e datePartExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	d, err := e.date.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if IsNullish(d) {
		return Null, nil
	}
	z, ok, err := evalZone(ctx, e.tz)
	if !ok {
		return Null, err
	}
	ms, err := coerceDate(d)
	if err != nil {
		return Missing, err
	}
	n := e.part(z.localTime(ms))
	if e.long {
		return Int64(n), nil
	}
	return Int32(int32(n)), nil
}

// checkConstantZone resolves a literal timezone argument at parse time, as
// MongoDB does when it optimizes the expression: an unknown zone fails even
// when no document reaches the operator.
func checkConstantZone(e Expr) error {
	c, ok := e.(constant)
	if !ok || IsNullish(c.v) {
		return nil
	}
	_, err := zoneOf(c.v)
	return err
}

// dateArgs parses an operator's object of named arguments: each known name
// maps to its parsed expression.
func dateArgs(op string, arg bsoncore.Value, s *Scope, notObject, unknown mongoerr.Code, notObjectMsg string, names ...string) (map[string]Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(notObject, notObjectMsg, op, TypeName(arg))
	}
	out := map[string]Expr{}
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			return out, checkConstantZone(out["timezone"])
		}
		known := false
		for _, n := range names {
			known = known || n == string(k)
		}
		if !known {
			return nil, errorf(unknown, "Unrecognized argument to %s: %s", op, k)
		}
		x, err := ParseIn(v, s)
		if err != nil {
			return nil, err
		}
		out[string(k)] = x
	}
}

// $dateToParts: {date, timezone, iso8601}.

type dateToPartsExpr struct{ date, tz, iso Expr }

func parseDateToParts(arg bsoncore.Value, s *Scope) (Expr, error) {
	a, err := dateArgs("$dateToParts", arg, s, codeToPartsNotObject, codeToPartsUnknownArg,
		"%s only supports an object as its argument, found %s", "date", "timezone", "iso8601")
	if err != nil {
		return nil, err
	}
	if a["date"] == nil {
		return nil, errorf(codeToPartsMissingDate, "Missing 'date' parameter to $dateToParts")
	}
	return dateToPartsExpr{date: a["date"], tz: a["timezone"], iso: a["iso8601"]}, nil
}

func (e dateToPartsExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	d, err := e.date.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	iso := false
	if e.iso != nil {
		v, err := e.iso.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if IsNullish(v) {
			return Null, nil
		}
		b, isBool := v.BooleanOK()
		if !isBool {
			return Missing, errorf(codeToPartsISOType, "iso8601 must evaluate to a bool, found %s", TypeName(v))
		}
		iso = b
	}
	z, ok, err := evalZone(ctx, e.tz)
	if !ok {
		return Null, err
	}
	if IsNullish(d) {
		return Null, nil
	}
	ms, err := coerceDate(d)
	if err != nil {
		return Missing, err
	}
	t := z.localTime(ms)
	b := bsoncore.NewDocumentBuilder()
	if iso {
		y, w := t.ISOWeek()
		b.AppendInt32("isoWeekYear", int32(y)).AppendInt32("isoWeek", int32(w)).AppendInt32("isoDayOfWeek", int32(isoWeekday(t)))
	} else {
		b.AppendInt32("year", int32(t.Year())).AppendInt32("month", int32(t.Month())).AppendInt32("day", int32(t.Day()))
	}
	b.AppendInt32("hour", int32(t.Hour())).AppendInt32("minute", int32(t.Minute())).
		AppendInt32("second", int32(t.Second())).AppendInt32("millisecond", int32(t.Nanosecond()/1e6))
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b.Build()}, nil
}

// $dateFromParts: {year, month, day | isoWeekYear, isoWeek, isoDayOfWeek,
// hour, minute, second, millisecond, timezone}. Parts outside their usual
// range carry into the next larger unit (month 14 is February of the next
// year), as in MongoDB 4.4 and later.

type dateFromPartsExpr struct{ a map[string]Expr }

func parseDateFromParts(arg bsoncore.Value, s *Scope) (Expr, error) {
	a, err := dateArgs("$dateFromParts", arg, s, codeFromPartsNotObject, codeFromPartsUnknownArg,
		"%s only supports an object as its argument, found %s",
		"year", "month", "day", "hour", "minute", "second", "millisecond",
		"isoWeekYear", "isoWeek", "isoDayOfWeek", "timezone")
	if err != nil {
		return nil, err
	}
	year, isoYear := a["year"] != nil, a["isoWeekYear"] != nil
	switch {
	case !year && !isoYear:
		return nil, errorf(codeFromPartsNoYear, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
	case year && (isoYear || a["isoWeek"] != nil || a["isoDayOfWeek"] != nil):
		return nil, errorf(codeFromPartsMixNatural, "$dateFromParts does not allow mixing natural dates with ISO dates")
	case isoYear && (a["month"] != nil || a["day"] != nil):
		return nil, errorf(codeFromPartsMixISO, "$dateFromParts does not allow mixing ISO dates with natural dates")
	}
	return dateFromPartsExpr{a}, nil
}

// part evaluates one integer part: absent gives def; ok is false for null
// or missing. bounded parts must lie in [-32768, 32767].
func (e dateFromPartsExpr) part(ctx *Context, name string, def int64, bounded bool) (n int64, ok bool, err error) {
	x := e.a[name]
	if x == nil {
		return def, true, nil
	}
	v, err := x.Eval(ctx)
	if err != nil || IsNullish(v) {
		return 0, false, err
	}
	n, integral := integral64(v)
	if !integral {
		return 0, false, errorf(codeFromPartsNotInteger, "'%s' must evaluate to an integer, found %s with value %s", name, TypeName(v), v)
	}
	if bounded && (n < -32768 || n > 32767) {
		return 0, false, errorf(codeFromPartsPartRange, "'%s' must evaluate to a value in the range [-32768, 32767]; but found %d", name, n)
	}
	return n, true, nil
}

// Integral64 is MongoDB's Value::integral64Bit: an int, a long, or a
// double or decimal holding an integer that fits a long, as an int64; ok
// is false for anything else. Stages use it for their integral arguments.
func Integral64(v bsoncore.Value) (int64, bool) { return integral64(v) }

// integral64 is Value::integral64Bit plus coerceToLong: an int, a long, or
// a double or decimal holding an integer that fits a long.
func integral64(v bsoncore.Value) (int64, bool) {
	n, ok := numberOf(v)
	if !ok {
		return 0, false
	}
	switch n.t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return n.i, true
	case bsoncore.TypeDouble:
		if n.f != math.Trunc(n.f) || n.f < -9223372036854775808.0 || n.f >= 9223372036854775808.0 {
			return 0, false
		}
		return int64(n.f), true
	}
	if n.d.special != 0 {
		return 0, false
	}
	t := n.d.quantize(0, roundTrunc)
	if t.add(n.d.neg()).sign() != 0 {
		return 0, false
	}
	return decimalToInt64(t)
}

func (e dateFromPartsExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	var p [7]int64
	for i, f := range []struct {
		name    string
		bounded bool
	}{{"hour", true}, {"minute", true}, {"second", false}, {"millisecond", false}} {
		n, ok, err := e.part(ctx, f.name, 0, f.bounded)
		if !ok {
			return nullOr(err)
		}
		p[3+i] = n
	}
	z, ok, err := evalZone(ctx, e.a["timezone"])
	if !ok {
		return Null, err
	}
	iso := e.a["isoWeekYear"] != nil
	names := [3]string{"year", "month", "day"}
	if iso {
		names = [3]string{"isoWeekYear", "isoWeek", "isoDayOfWeek"}
	}
	for i, name := range names {
		n, ok, err := e.part(ctx, name, map[bool]int64{true: 1970, false: 1}[i == 0], i > 0)
		if !ok {
			return nullOr(err)
		}
		p[i] = n
	}
	if p[0] < 1 || p[0] > 9999 {
		if iso {
			return Missing, errorf(codeFromPartsISOYearRang, "'isoWeekYear' must evaluate to an integer in the range 1 to 9999, found %d", p[0])
		}
		return Missing, errorf(codeFromPartsYearRange, "'year' must evaluate to an integer in the range 1 to 9999, found %d", p[0])
	}
	var day time.Time
	if iso {
		day = isoWeekStart(int(p[0])).AddDate(0, 0, int((p[1]-1)*7+p[2]-1))
	} else {
		day = time.Date(int(p[0]), time.Month(p[1]), int(p[2]), 0, 0, 0, 0, time.UTC)
	}
	ms := day.UnixMilli() + p[3]*3600000 + p[4]*60000 + p[5]*1000 + p[6]
	return Date(z.fromLocal(time.UnixMilli(ms).UTC())), nil
}

func nullOr(err error) (bsoncore.Value, error) {
	if err != nil {
		return Missing, err
	}
	return Null, nil
}

// isoWeekStart is the Monday of ISO week 1 of isoYear: the week holding
// 4 January.
func isoWeekStart(isoYear int) time.Time {
	jan4 := time.Date(isoYear, 1, 4, 0, 0, 0, 0, time.UTC)
	return jan4.AddDate(0, 0, 1-isoWeekday(jan4))
}
