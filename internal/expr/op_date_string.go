package expr

import (
	"strconv"
	"strings"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $dateToString and $dateFromString: dates to and from strings with
// MongoDB's %-specifiers (%Y %m %d %H %M %S %L %j %w %u %U %V %G %z %Z %b
// %B %%), a time zone, and onNull / onError fallbacks.

func init() {
	register("$dateToString", parseDateToString)
	register("$dateFromString", parseDateFromString)
}

// MongoDB's codes for the date string operators.
const (
	codeToStringNotObject   = mongoerr.ToStringNotObject
	codeToStringUnknownArg  = mongoerr.ToStringUnknownArg
	codeToStringMissingDate = mongoerr.ToStringMissingDate
	codeToStringFormatType  = mongoerr.ToStringFormatType
	codeFormatUnmatchedPct  = mongoerr.FormatUnmatchedPct
	codeFormatBadSpecifier  = mongoerr.FormatBadSpecifier
	codeDatePartOutOfRange  = mongoerr.DatePartOutOfRange
	codeFromStringNotObject = mongoerr.FromStringNotObject
	codeFromStringUnknown   = mongoerr.FromStringUnknown
	codeFromStringMissing   = mongoerr.FromStringMissing
	codeFromStringFormatTyp = mongoerr.FromStringFormatType
)

// The specifiers each direction accepts (kDateToStringFormatMap and
// kDateFromStringFormatMap); "%%" is always allowed.
const (
	dateToStringSpecifiers   = "bBdGHjLmMSwuUVYzZ"
	dateFromStringSpecifiers = "bBdGHjLmMSuVYzZ"
)

// dateCheckFormat validates a format string: every '%' is followed by an
// allowed specifier or another '%'.
func dateCheckFormat(format, allowed string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i == len(format) {
			return errorf(codeFormatUnmatchedPct, "Unmatched '%%' at end of format string")
		}
		if format[i] != '%' && strings.IndexByte(allowed, format[i]) < 0 {
			return errorf(codeFormatBadSpecifier, "Invalid format character '%%%c' in format string", format[i])
		}
	}
	return nil
}

var dateMonthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// dateFormat renders instant ms in zone z with a validated format.
func dateFormat(format string, ms int64, z dateZone) (string, error) {
	t := z.localTime(ms)
	var b strings.Builder
	var err error
	pad := func(n, width int) {
		if err != nil {
			return
		}
		if n < 0 || n > 9999 {
			err = errorf(codeDatePartOutOfRange, "Could not convert date to string: date component was outside the supported range of 0-9999: %d", n)
			return
		}
		s := strconv.Itoa(n)
		for i := len(s); i < width; i++ {
			b.WriteByte('0')
		}
		b.WriteString(s)
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case '%':
			b.WriteByte('%')
		case 'Y':
			pad(t.Year(), 4)
		case 'm':
			pad(int(t.Month()), 2)
		case 'd':
			pad(t.Day(), 2)
		case 'H':
			pad(t.Hour(), 2)
		case 'M':
			pad(t.Minute(), 2)
		case 'S':
			pad(t.Second(), 2)
		case 'L':
			pad(t.Nanosecond()/1e6, 3)
		case 'j':
			pad(t.YearDay(), 3)
		case 'w':
			pad(int(t.Weekday())+1, 1)
		case 'U':
			pad(dateWeek(t), 2)
		case 'G':
			y, _ := t.ISOWeek()
			pad(y, 4)
		case 'V':
			_, w := t.ISOWeek()
			pad(w, 2)
		case 'u':
			pad(isoWeekday(t), 1)
		case 'b':
			b.WriteString(dateMonthNames[t.Month()-1][:3])
		case 'B':
			b.WriteString(dateMonthNames[t.Month()-1])
		case 'z':
			_, off := t.Zone()
			if off < 0 {
				b.WriteByte('-')
				off = -off
			} else {
				b.WriteByte('+')
			}
			pad(off/3600, 2)
			pad(off/60%60, 2)
		case 'Z':
			_, off := t.Zone()
			b.WriteString(strconv.Itoa(off / 60))
		}
	}
	return b.String(), err
}

type dateToStringExpr struct{ date, format, tz, onNull Expr }

func parseDateToString(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeToStringNotObject, "$dateToString only supports an object as its argument")
	}
	a, err := dateArgs("$dateToString", arg, s, codeToStringNotObject, codeToStringUnknownArg,
		"%s only supports an object as its argument, found %s", "date", "format", "timezone", "onNull")
	if err != nil {
		return nil, err
	}
	if a["date"] == nil {
		return nil, errorf(codeToStringMissingDate, "Missing 'date' parameter to $dateToString")
	}
	if err := checkConstantFormat(a["format"], dateToStringSpecifiers); err != nil {
		return nil, err
	}
	return dateToStringExpr{date: a["date"], format: a["format"], tz: a["timezone"], onNull: a["onNull"]}, nil
}

// checkConstantFormat validates a literal format string at parse time, as
// MongoDB does.
func checkConstantFormat(e Expr, allowed string) error {
	if c, ok := e.(constant); ok {
		if f, isStr := stringOf(c.v); isStr {
			return dateCheckFormat(f, allowed)
		}
	}
	return nil
}

// evalFormat evaluates an optional format: ok is false when it is nullish.
func evalFormat(ctx *Context, e Expr, op string, typeCode mongoerr.Code, allowed string) (format string, ok bool, err error) {
	v, err := e.Eval(ctx)
	if err != nil || IsNullish(v) {
		return "", false, err
	}
	f, isStr := stringOf(v)
	if !isStr {
		return "", false, errorf(typeCode, "%s requires that 'format' be a string, found: %s with value %s", op, TypeName(v), v)
	}
	if err := dateCheckFormat(f, allowed); err != nil {
		return "", false, err
	}
	return f, true, nil
}

func (e dateToStringExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	d, err := e.date.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	format, haveFormat := "", false
	if e.format != nil {
		if format, haveFormat, err = evalFormat(ctx, e.format, "$dateToString", codeToStringFormatType, dateToStringSpecifiers); err != nil {
			return Missing, err
		}
	}
	z, zok, err := evalZone(ctx, e.tz)
	if err != nil {
		return Missing, err
	}
	if IsNullish(d) {
		if e.onNull != nil {
			return e.onNull.Eval(ctx)
		}
		return Null, nil
	}
	if !zok || (e.format != nil && !haveFormat) {
		return Null, nil
	}
	if e.format == nil {
		format = "%Y-%m-%dT%H:%M:%S.%L"
		if z.utc {
			format += "Z"
		}
	}
	ms, err := coerceDate(d)
	if err != nil {
		return Missing, err
	}
	out, err := dateFormat(format, ms, z)
	if err != nil {
		return Missing, err
	}
	return String(out), nil
}

// $dateFromString: {dateString, format, timezone, onError, onNull}.

type dateFromStringExpr struct{ str, format, tz, onError, onNull Expr }

func parseDateFromString(arg bsoncore.Value, s *Scope) (Expr, error) {
	a, err := dateArgs("$dateFromString", arg, s, codeFromStringNotObject, codeFromStringUnknown,
		"%s only supports an object as an argument, found: %s", "dateString", "format", "timezone", "onError", "onNull")
	if err != nil {
		return nil, err
	}
	if a["dateString"] == nil {
		return nil, errorf(codeFromStringMissing, "Missing 'dateString' parameter to $dateFromString")
	}
	if err := checkConstantFormat(a["format"], dateFromStringSpecifiers); err != nil {
		return nil, err
	}
	return dateFromStringExpr{str: a["dateString"], format: a["format"], tz: a["timezone"], onError: a["onError"], onNull: a["onNull"]}, nil
}

func (e dateFromStringExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, err := e.str.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	format, haveFormat := "", false
	if e.format != nil {
		if format, haveFormat, err = evalFormat(ctx, e.format, "$dateFromString", codeFromStringFormatTyp, dateFromStringSpecifiers); err != nil {
			return Missing, err
		}
	}
	z, zok, err := evalZone(ctx, e.tz)
	if err != nil {
		return Missing, err
	}
	if IsNullish(v) {
		if e.onNull != nil {
			return e.onNull.Eval(ctx)
		}
		return Null, nil
	}
	if !zok || (e.format != nil && !haveFormat) {
		return Null, nil
	}
	str, isStr := stringOf(v)
	var ms int64
	if !isStr {
		err = errorf(codeConversionFailure, "$dateFromString requires that 'dateString' be a string, found: %s with value %s", TypeName(v), v)
	} else {
		ms, err = dateParse(str, format, haveFormat, z, e.tz != nil)
	}
	if err != nil {
		if e.onError != nil {
			return e.onError.Eval(ctx)
		}
		return Missing, err
	}
	return Date(ms), nil
}

// dateFields are the parts a date string supplied; -1 is unset.
type dateFields struct {
	y, m, d, h, i, s, ms  int
	isoY, isoW, isoD, doy int
	offset                int // seconds east of UTC, when hasZone
	hasZone               bool
}

func newDateFields() dateFields {
	return dateFields{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, false}
}

func dateParseError(s, why string) error {
	return errorf(codeConversionFailure, "Error parsing date string '%s'; %s", s, why)
}

// dateParse parses a date string (TimeZoneDatabase::fromString): with a
// format, field by field; without, as ISO 8601 ("2017-07-04",
// "2017-07-04T11:56:02.813Z", "2017-07-04 11:56:02 +0200"). A string that
// names its own zone cannot be combined with a timezone argument other than
// UTC.
func dateParse(str, format string, haveFormat bool, z dateZone, tzGiven bool) (int64, error) {
	f := newDateFields()
	var err error
	if haveFormat {
		err = dateScanFormat(str, format, &f)
	} else {
		err = dateScanISO(str, &f)
	}
	if err != nil {
		return 0, err
	}
	// A string without a time is midnight, and a partial time is zero-filled.
	for _, p := range []*int{&f.h, &f.i, &f.s, &f.ms} {
		if *p < 0 {
			*p = 0
		}
	}
	switch {
	case f.isoY >= 0:
		if f.isoW < 0 {
			f.isoW = 1
		}
		if f.isoD < 0 {
			f.isoD = 1
		}
		t := isoWeekStart(f.isoY).AddDate(0, 0, (f.isoW-1)*7+f.isoD-1)
		f.y, f.m, f.d = t.Year(), int(t.Month()), t.Day()
	case f.doy >= 0 && f.y >= 0:
		t := time.Date(f.y, 1, f.doy, 0, 0, 0, 0, time.UTC)
		f.m, f.d = int(t.Month()), t.Day()
	}
	if f.y < 0 || f.m < 0 || f.d < 0 {
		return 0, errorf(codeConversionFailure, "an incomplete date/time string has been found, with elements missing: \"%s\"", str)
	}
	if f.m < 1 || f.m > 12 || f.d < 1 || f.d > daysIn(f.y, f.m) {
		return 0, dateParseError(str, "The parsed date was invalid")
	}
	if f.h > 23 || f.i > 59 || f.s > 59 {
		return 0, dateParseError(str, "The parsed time was invalid")
	}
	wall := time.Date(f.y, time.Month(f.m), f.d, f.h, f.i, f.s, f.ms*1e6, time.UTC)
	if f.hasZone {
		if tzGiven && !z.utc {
			return 0, errorf(codeConversionFailure, "you cannot pass in a date/time string with GMT offset together with a timezone argument")
		}
		return wall.UnixMilli() - int64(f.offset)*1000, nil
	}
	return z.fromLocal(wall), nil
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dateScanner reads a date string left to right.
type dateScanner struct {
	s   string
	pos int
}

// digits reads between min and max decimal digits.
func (sc *dateScanner) digits(min, max int) (int, bool) {
	n, start := 0, sc.pos
	for sc.pos < len(sc.s) && sc.pos-start < max && sc.s[sc.pos] >= '0' && sc.s[sc.pos] <= '9' {
		n = n*10 + int(sc.s[sc.pos]-'0')
		sc.pos++
	}
	return n, sc.pos-start >= min
}

func (sc *dateScanner) accept(c byte) bool {
	if sc.pos < len(sc.s) && sc.s[sc.pos] == c {
		sc.pos++
		return true
	}
	return false
}

// fraction reads up to three digits of a fraction of a second as
// milliseconds ("8" is 800), skipping further digits.
func (sc *dateScanner) fraction() (int, bool) {
	start := sc.pos
	n, ok := sc.digits(1, 3)
	for k := sc.pos - start; k < 3; k++ {
		n *= 10
	}
	sc.digits(0, 1<<30)
	return n, ok
}

// zone reads a zone after optional spaces: a ±HH[[:]MM] offset, "Z",
// "UTC" or "GMT" (optionally followed by an offset), a common abbreviation
// ("EST", "CEST") or a military letter ("A" is +01:00), as timelib does.
func (sc *dateScanner) zone(f *dateFields) bool {
	for sc.accept(' ') {
	}
	start := sc.pos
	for sc.pos < len(sc.s) && (sc.s[sc.pos]|0x20 >= 'a' && sc.s[sc.pos]|0x20 <= 'z') {
		sc.pos++
	}
	word := strings.ToUpper(sc.s[start:sc.pos])
	switch {
	case word == "":
		return sc.offset(f)
	case word == "UTC" || word == "GMT" || word == "UT" || word == "Z":
		f.offset, f.hasZone = 0, true
		if sc.pos < len(sc.s) && (sc.s[sc.pos] == '+' || sc.s[sc.pos] == '-') {
			return sc.offset(f)
		}
		return true
	}
	if hours, ok := dateZoneAbbreviations[word]; ok {
		f.offset, f.hasZone = int(hours*3600), true
		return true
	}
	if len(word) == 1 && word != "J" {
		c := int(word[0] - 'A')
		switch {
		case word <= "I":
			f.offset = (c + 1) * 3600
		case word <= "M":
			f.offset = c * 3600 // K is +10: J is skipped
		default:
			f.offset = -(c - 'N' + 'A' + 1) * 3600
		}
		f.hasZone = true
		return true
	}
	return false
}

// dateZoneAbbreviations are the zone abbreviations a date string may end
// with, in hours from UTC (a subset of timelib's table: the unambiguous
// common ones).
var dateZoneAbbreviations = map[string]float64{
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
	"AKST": -9, "AKDT": -8, "HST": -10, "BST": 1, "WET": 0, "WEST": 1, "CET": 1, "CEST": 2,
	"MET": 1, "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3, "JST": 9, "KST": 9, "HKT": 8,
	"AEST": 10, "AEDT": 11, "ACST": 9.5, "ACDT": 10.5, "AWST": 8, "NZST": 12, "NZDT": 13,
}

func (sc *dateScanner) offset(f *dateFields) bool {
	if sc.pos >= len(sc.s) || (sc.s[sc.pos] != '+' && sc.s[sc.pos] != '-') {
		return false
	}
	sign := 1
	if sc.s[sc.pos] == '-' {
		sign = -1
	}
	sc.pos++
	h, ok := sc.digits(1, 2)
	if !ok {
		return false
	}
	m := 0
	if sc.accept(':') {
		if m, ok = sc.digits(2, 2); !ok {
			return false
		}
	} else if sc.pos+1 < len(sc.s) && sc.s[sc.pos] >= '0' && sc.s[sc.pos] <= '9' {
		m, _ = sc.digits(2, 2)
	}
	f.offset = sign * (h*3600 + m*60)
	f.hasZone = true
	return true
}

// dateScanISO parses YYYY-MM-DD[(T| )HH:MM[:SS[.fff]]][ ][zone].
func dateScanISO(str string, f *dateFields) error {
	sc := &dateScanner{s: strings.TrimSpace(str)}
	bad := func() error { return dateParseError(str, "unexpected character at position "+strconv.Itoa(sc.pos)) }
	var ok bool
	if f.y, ok = sc.digits(4, 4); !ok || !sc.accept('-') {
		return bad()
	}
	if f.m, ok = sc.digits(1, 2); !ok || !sc.accept('-') {
		return bad()
	}
	if f.d, ok = sc.digits(1, 2); !ok {
		return bad()
	}
	if sc.accept('T') || sc.accept('t') || sc.accept(' ') {
		if f.h, ok = sc.digits(1, 2); !ok || !sc.accept(':') {
			return bad()
		}
		if f.i, ok = sc.digits(2, 2); !ok {
			return bad()
		}
		// timelib also reads "11:56.02" as 11:56:02.
		if sc.accept(':') || (sc.pos+3 <= len(sc.s) && sc.s[sc.pos] == '.' && isDigits(sc.s[sc.pos+1:sc.pos+3], 2) && sc.accept('.')) {
			if f.s, ok = sc.digits(2, 2); !ok {
				return bad()
			}
			if sc.accept('.') {
				if f.ms, ok = sc.fraction(); !ok {
					return bad()
				}
			}
		}
	}
	if sc.pos < len(sc.s) && !sc.zone(f) {
		return bad()
	}
	if sc.pos != len(sc.s) {
		return bad()
	}
	return nil
}

// isDigits reports whether s is n decimal digits.
func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < n; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dateScanFormat parses str field by field as format says; other format
// characters must match literally.
func dateScanFormat(str, format string, f *dateFields) error {
	sc := &dateScanner{s: str}
	num := func(dst *int, min, max int, what string) error {
		n, ok := sc.digits(min, max)
		if !ok {
			return dateParseError(str, what+" could not be found")
		}
		*dst = n
		return nil
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			if !sc.accept(c) {
				return dateParseError(str, "The format separator does not match")
			}
			continue
		}
		i++
		var err error
		switch format[i] {
		case '%':
			if !sc.accept('%') {
				err = dateParseError(str, "The format separator does not match")
			}
		case 'Y':
			err = num(&f.y, 4, 4, "A four digit year")
		case 'm':
			err = num(&f.m, 1, 2, "A two digit month")
		case 'd':
			err = num(&f.d, 1, 2, "A two digit day")
		case 'H':
			err = num(&f.h, 1, 2, "A two digit hour")
		case 'M':
			err = num(&f.i, 1, 2, "A two digit minute")
		case 'S':
			err = num(&f.s, 1, 2, "A two digit second")
		case 'L':
			n, ok := sc.fraction()
			if !ok {
				err = dateParseError(str, "A three digit millisecond could not be found")
			}
			f.ms = n
		case 'j':
			err = num(&f.doy, 1, 3, "A three digit day-of-year")
		case 'G':
			err = num(&f.isoY, 4, 4, "A four digit ISO year")
		case 'V':
			err = num(&f.isoW, 1, 2, "A two digit ISO week")
		case 'u':
			err = num(&f.isoD, 1, 1, "A single digit day of week")
		case 'z':
			if !sc.zone(f) {
				err = dateParseError(str, "The timezone could not be found in the database")
			}
		case 'Z':
			sign := 1
			if sc.accept('-') {
				sign = -1
			} else {
				sc.accept('+')
			}
			n, ok := sc.digits(1, 4)
			if !ok {
				err = dateParseError(str, "A timezone offset in minutes could not be found")
			}
			f.offset, f.hasZone = sign*n*60, true
		case 'b', 'B':
			if f.m = sc.monthName(format[i] == 'B'); f.m < 0 {
				err = dateParseError(str, "A textual month could not be found")
			}
		}
		if err != nil {
			return err
		}
	}
	if sc.pos != len(str) {
		return dateParseError(str, "Trailing data")
	}
	return nil
}

// monthName reads an English month name (full, or its first three letters),
// ignoring case; -1 if there is none.
func (sc *dateScanner) monthName(full bool) int {
	rest := strings.ToLower(sc.s[sc.pos:])
	for i, name := range dateMonthNames {
		if !full {
			name = name[:3]
		}
		if strings.HasPrefix(rest, strings.ToLower(name)) {
			sc.pos += len(name)
			return i + 1
		}
	}
	return -1
}
