package expr

import (
	"math"
	"strings"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Date arithmetic: $dateAdd $dateSubtract $dateDiff $dateTrunc, and the
// Timestamp parts $tsSecond $tsIncrement. Units of a day or more work on
// the wall clock of the time zone (adding a day across a DST change keeps
// the local time of day); smaller units work on elapsed time. $dateDiff
// counts unit boundaries crossed, not elapsed whole units, as MongoDB does:
// from 23:59 to 00:01 the next day is one day.

func init() {
	register("$dateAdd", parseDateArith("$dateAdd", 1))
	register("$dateSubtract", parseDateArith("$dateSubtract", -1))
	register("$dateDiff", parseDateDiff)
	register("$dateTrunc", parseDateTrunc)
	register("$tsSecond", parseFixed("$tsSecond", 1, evalTSPart(codeTSSecondType, func(t, _ uint32) int64 { return int64(t) })))
	register("$tsIncrement", parseFixed("$tsIncrement", 1, evalTSPart(codeTSIncrementType, func(_, i uint32) int64 { return int64(i) })))
}

// MongoDB's codes for date arithmetic.
const (
	codeDateArithNotObject  = mongoerr.DateArithNotObject
	codeDateArithUnknownArg = mongoerr.DateArithUnknownArg
	codeDateArithMissingArg = mongoerr.DateArithMissingArg
	codeDateArithStartType  = mongoerr.DateArithStartType
	codeDateArithUnitType   = mongoerr.DateArithUnitType
	codeDateArithAmountType = mongoerr.DateArithAmountType
	codeDateArithOverflow   = mongoerr.DateArithOverflow
	codeDateArithAmountRang = mongoerr.DateArithAmountRange
	codeDateDiffNotObject   = mongoerr.DateDiffNotObject
	codeDateDiffUnknownArg  = mongoerr.DateDiffUnknownArg
	codeDateDiffMissingStrt = mongoerr.DateDiffMissingStart
	codeDateDiffMissingEnd  = mongoerr.DateDiffMissingEnd
	codeDateDiffMissingUnit = mongoerr.DateDiffMissingUnit
	codeDateDiffDateType    = mongoerr.DateDiffDateType
	codeDateDiffOverflow    = mongoerr.DateDiffOverflow
	codeTruncNotObject      = mongoerr.TruncNotObject
	codeTruncUnknownArg     = mongoerr.TruncUnknownArg
	codeTruncMissingDate    = mongoerr.TruncMissingDate
	codeTruncMissingUnit    = mongoerr.TruncMissingUnit
	codeTruncDateType       = mongoerr.TruncDateType
	codeUnitType            = mongoerr.DateUnitType
	codeUnitValue           = mongoerr.DateUnitValue
	codeStartOfWeekType     = mongoerr.StartOfWeekType
	codeStartOfWeekValue    = mongoerr.StartOfWeekValue
	codeTruncBinSizeType    = mongoerr.TruncBinSizeType
	codeTruncBinSizeValue   = mongoerr.TruncBinSizeValue
	codeTruncOverflow       = mongoerr.TruncOverflow
	codeTruncBinSizeRange   = mongoerr.TruncBinSizeRange
	codeTSSecondType        = mongoerr.TimestampSecondType
	codeTSIncrementType     = mongoerr.TimestampIncrementType
)

// dateUnit is a time unit, in MongoDB's order from largest.
type dateUnit int

const (
	unitYear dateUnit = iota
	unitQuarter
	unitMonth
	unitWeek
	unitDay
	unitHour
	unitMinute
	unitSecond
	unitMillisecond
)

var dateUnitNames = map[string]dateUnit{
	"year": unitYear, "quarter": unitQuarter, "month": unitMonth, "week": unitWeek, "day": unitDay,
	"hour": unitHour, "minute": unitMinute, "second": unitSecond, "millisecond": unitMillisecond,
}

// unitMillis is the length of the units that have a fixed one.
var unitMillis = map[dateUnit]int64{unitHour: 3600000, unitMinute: 60000, unitSecond: 1000, unitMillisecond: 1}

// dateDayNames are startOfWeek's accepted values, as ISO weekdays.
var dateDayNames = map[string]int{
	"monday": 1, "mon": 1, "tuesday": 2, "tue": 2, "wednesday": 3, "wed": 3, "thursday": 4, "thu": 4,
	"friday": 5, "fri": 5, "saturday": 6, "sat": 6, "sunday": 7, "sun": 7,
}

// dateUnitOf reads a unit value with the given codes for a non-string and
// an unknown name.
func dateUnitOf(v bsoncore.Value, op string, typeCode, valueCode mongoerr.Code) (dateUnit, error) {
	s, ok := stringOf(v)
	if !ok {
		return 0, errorf(typeCode, "%s requires 'unit' to be a string, but got %s", op, TypeName(v))
	}
	u, ok := dateUnitNames[s]
	if !ok {
		return 0, errorf(valueCode, "%s parameter 'unit' value cannot be recognized as a time unit: %s", op, s)
	}
	return u, nil
}

func startOfWeekOf(v bsoncore.Value, op string) (int, error) {
	s, ok := stringOf(v)
	if !ok {
		return 0, errorf(codeStartOfWeekType, "%s requires 'startOfWeek' to be a string, but got %s", op, TypeName(v))
	}
	d, ok := dateDayNames[strings.ToLower(s)]
	if !ok {
		return 0, errorf(codeStartOfWeekValue, "%s parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", op, s)
	}
	return d, nil
}

// evalAll evaluates the named arguments present in a; ok is false if any
// is null or missing, which makes the operator's result null before any
// argument is type-checked.
func evalAll(ctx *Context, a map[string]Expr, names ...string) (vals map[string]bsoncore.Value, ok bool, err error) {
	vals = make(map[string]bsoncore.Value, len(names))
	for _, n := range names {
		x := a[n]
		if x == nil {
			continue
		}
		v, err := x.Eval(ctx)
		if err != nil {
			return nil, false, err
		}
		if IsNullish(v) {
			return nil, false, nil
		}
		vals[n] = v
	}
	return vals, true, nil
}

// zoneOf resolves an evaluated, non-null timezone argument, or UTC if none.
func zoneOf(v bsoncore.Value) (dateZone, error) {
	if v.Type == 0 {
		return utcZone, nil
	}
	name, ok := stringOf(v)
	if !ok {
		return dateZone{}, errorf(codeTimezoneType, "timezone must evaluate to a string, found %s", TypeName(v))
	}
	return lookupZone(name)
}

// $dateAdd / $dateSubtract: {startDate, unit, amount, timezone}.

type dateArithExpr struct {
	op   string
	sign int64
	a    map[string]Expr
}

func parseDateArith(op string, sign int64) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		a, err := dateArgs(op, arg, s, codeDateArithNotObject, codeDateArithUnknownArg,
			"%s expects an object as its argument, found %s", "startDate", "unit", "amount", "timezone")
		if err != nil {
			return nil, err
		}
		for _, n := range []string{"startDate", "unit", "amount"} {
			if a[n] == nil {
				return nil, errorf(codeDateArithMissingArg, "%s requires %s", op, n)
			}
		}
		return dateArithExpr{op: op, sign: sign, a: a}, nil
	}
}

func (e dateArithExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, ok, err := evalAll(ctx, e.a, "startDate", "unit", "amount", "timezone")
	if !ok {
		return nullOr(err)
	}
	z, err := zoneOf(v["timezone"])
	if err != nil {
		return Missing, err
	}
	start, isDate := dateMillis(v["startDate"])
	if !isDate {
		return Missing, errorf(codeDateArithStartType, "%s requires startDate to be convertible to a date", e.op)
	}
	unitName, isStr := stringOf(v["unit"])
	if !isStr {
		return Missing, errorf(codeDateArithUnitType, "%s expects string defining the time unit", e.op)
	}
	amount, integral := integral64(v["amount"])
	if !integral {
		return Missing, errorf(codeDateArithAmountType, "%s expects integer amount of time units", e.op)
	}
	unit, known := dateUnitNames[unitName]
	if !known {
		return Missing, errorf(codeFailedToParse, "unknown time unit value: %s", unitName)
	}
	ms, err := dateAdd(start, unit, amount*e.sign, z)
	if err != nil {
		return Missing, err
	}
	return Date(ms), nil
}

// dateAddMax is, per unit, the bound below which an amount cannot overflow
// the computation (MongoDB's isDateAddAmountValid).
func dateAddMax(u dateUnit) int64 {
	const maxDays = math.MaxUint64/86400000 + 1
	const maxYears = maxDays/365 + 1
	switch u {
	case unitYear:
		return maxYears
	case unitQuarter:
		return maxYears * 4
	case unitMonth:
		return maxYears * 12
	case unitWeek:
		return maxDays / 7
	case unitDay:
		return maxDays
	case unitHour:
		return maxDays * 24
	case unitMinute:
		return maxDays * 24 * 60
	}
	return maxDays * 24 * 60 * 60
}

// AddDateUnits is $dateAdd in UTC, for the stages that step dates by a
// unit ($densify's step, $setWindowFields' range bounds): ms plus amount
// units ("year" … "millisecond"), calendar units clamping the day to the
// end of a shorter month. Overflow is $dateAdd's error.
func AddDateUnits(ms int64, unit string, amount int64) (int64, error) {
	u, ok := dateUnitNames[unit]
	if !ok {
		return 0, errorf(codeFailedToParse, "unknown time unit value: %s", unit)
	}
	return dateAdd(ms, u, amount, utcZone)
}

// dateAdd adds amount units to instant ms in zone z (MongoDB's dateAdd).
// Months that end before the start's day of month clamp to their last day
// (31 January + 1 month is 28 or 29 February).
func dateAdd(ms int64, unit dateUnit, amount int64, z dateZone) (int64, error) {
	overflow := errorf(codeDateArithOverflow, "dateAdd overflowed")
	if unit == unitMillisecond {
		r := ms + amount
		if (amount > 0 && r < ms) || (amount < 0 && r > ms) {
			return 0, overflow
		}
		return r, nil
	}
	if max := dateAddMax(unit); amount <= -max || amount >= max {
		return 0, errorf(codeDateArithAmountRang, "invalid dateAdd 'amount' parameter value: %d %s", amount, unitName(unit))
	}
	local := z.localTime(ms)
	wall := wallClock(local)
	_, off := local.Zone()
	months := int64(0)
	switch unit {
	case unitYear:
		months = amount * 12
	case unitQuarter:
		months = amount * 3
	case unitMonth:
		months = amount
	}
	days := int64(0)
	switch {
	case unit == unitWeek:
		days = amount * 7
	case unit == unitDay:
		days = amount
	case months != 0 && (wall.Day() > 28 || off != 0):
		y, m := addMonths(int64(wall.Year()), int64(wall.Month()), months)
		d := min(wall.Day(), daysIn(int(y), int(m)))
		days = civilDay(int(y), int(m), d) - civilDay(wall.Year(), int(wall.Month()), wall.Day())
		months = 0
	}
	if unit > unitDay {
		// Hours, minutes and seconds are elapsed time in every zone.
		per := unitMillis[unit]
		if amount > math.MaxInt64/per || amount < math.MinInt64/per {
			return 0, overflow
		}
		return addElapsed(ms, amount*per, overflow)
	}
	r := wall.AddDate(0, int(months), int(days))
	if r.Year() > 292278993 || r.Year() < -292275054 {
		return 0, overflow
	}
	return z.fromLocal(r), nil
}

func addElapsed(ms, delta int64, overflow error) (int64, error) {
	r := ms + delta
	if (delta > 0 && r < ms) || (delta < 0 && r > ms) {
		return 0, overflow
	}
	return r, nil
}

func unitName(u dateUnit) string {
	for n, v := range dateUnitNames {
		if v == u {
			return n
		}
	}
	return ""
}

// addMonths adds amount months to year/month (month 1-12).
func addMonths(y, m, amount int64) (int64, int64) {
	t := m - 1 + amount
	y += floorDiv(t, 12)
	return y, t - floorDiv(t, 12)*12 + 1
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilDay numbers a calendar day: days since 1970-01-01.
func civilDay(y, m, d int) int64 {
	return floorDiv(time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

// $dateDiff: {startDate, endDate, unit, timezone, startOfWeek}; a long.

type dateDiffExpr struct{ a map[string]Expr }

func parseDateDiff(arg bsoncore.Value, s *Scope) (Expr, error) {
	a, err := dateArgs("$dateDiff", arg, s, codeDateDiffNotObject, codeDateDiffUnknownArg,
		"%s only supports an object as its argument, found %s", "startDate", "endDate", "unit", "timezone", "startOfWeek")
	if err != nil {
		return nil, err
	}
	for _, req := range []struct {
		name string
		code mongoerr.Code
	}{{"startDate", codeDateDiffMissingStrt}, {"endDate", codeDateDiffMissingEnd}, {"unit", codeDateDiffMissingUnit}} {
		if a[req.name] == nil {
			return nil, errorf(req.code, "Missing '%s' parameter to $dateDiff", req.name)
		}
	}
	return dateDiffExpr{a}, nil
}

func (e dateDiffExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, ok, err := evalAll(ctx, e.a, "startDate", "endDate", "unit", "timezone", "startOfWeek")
	if !ok {
		return nullOr(err)
	}
	start, ok1 := dateMillis(v["startDate"])
	end, ok2 := dateMillis(v["endDate"])
	if !ok1 || !ok2 {
		bad := v["startDate"]
		if ok1 {
			bad = v["endDate"]
		}
		return Missing, errorf(codeDateDiffDateType, "$dateDiff requires 'startDate' and 'endDate' to be date, timestamp or ObjectId, found %s", TypeName(bad))
	}
	unit, err := dateUnitOf(v["unit"], "$dateDiff", codeUnitType, codeUnitValue)
	if err != nil {
		return Missing, err
	}
	z, err := zoneOf(v["timezone"])
	if err != nil {
		return Missing, err
	}
	sow := 7
	if sw, given := v["startOfWeek"]; given && unit == unitWeek {
		if sow, err = startOfWeekOf(sw, "$dateDiff"); err != nil {
			return Missing, err
		}
	}
	if unit == unitMillisecond {
		r, err := addElapsed(end, -start, errorf(codeDateDiffOverflow, "dateDiff overflowed"))
		if start == math.MinInt64 {
			err = errorf(codeDateDiffOverflow, "dateDiff overflowed")
		}
		if err != nil {
			return Missing, err
		}
		return Int64(r), nil
	}
	return Int64(dateDiffUnits(z.localTime(start), z.localTime(end), unit, sow)), nil
}

// dateDiffUnits counts the unit boundaries between local times s and e.
// Hours, minutes and seconds are corrected by the change of UTC offset, so
// they measure elapsed time across DST changes.
func dateDiffUnits(s, e time.Time, unit dateUnit, startOfWeek int) int64 {
	years := int64(e.Year() - s.Year())
	days := civilDay(e.Year(), int(e.Month()), e.Day()) - civilDay(s.Year(), int(s.Month()), s.Day())
	_, so := s.Zone()
	_, eo := e.Zone()
	offDelta := int64(so - eo)
	hours := int64(e.Hour()-s.Hour()) + days*24
	minutes := int64(e.Minute()-s.Minute()) + hours*60
	switch unit {
	case unitYear:
		return years
	case unitQuarter:
		return int64((int(e.Month())-1)/3-(int(s.Month())-1)/3) + years*4
	case unitMonth:
		return int64(e.Month()-s.Month()) + years*12
	case unitWeek:
		return (days + int64(weekdayFrom(s, startOfWeek)) - int64(weekdayFrom(e, startOfWeek))) / 7
	case unitDay:
		return days
	case unitHour:
		return hours + offDelta/3600
	case unitMinute:
		return minutes + offDelta/60
	}
	return int64(e.Second()-s.Second()) + minutes*60 + offDelta
}

// weekdayFrom is t's day within a week that starts on ISO weekday sow: 0 for
// the first day, 6 for the last.
func weekdayFrom(t time.Time, sow int) int {
	return (isoWeekday(t) - sow + 7) % 7
}

// $dateTrunc: {date, unit, binSize, timezone, startOfWeek}. Bins are
// counted from 2000-01-01T00:00 in the time zone (for weeks, the first
// startOfWeek day on or after it).

type dateTruncExpr struct{ a map[string]Expr }

func parseDateTrunc(arg bsoncore.Value, s *Scope) (Expr, error) {
	a, err := dateArgs("$dateTrunc", arg, s, codeTruncNotObject, codeTruncUnknownArg,
		"%s only supports an object as its argument, found %s", "date", "unit", "binSize", "timezone", "startOfWeek")
	if err != nil {
		return nil, err
	}
	if a["date"] == nil {
		return nil, errorf(codeTruncMissingDate, "Missing 'date' parameter to $dateTrunc")
	}
	if a["unit"] == nil {
		return nil, errorf(codeTruncMissingUnit, "Missing 'unit' parameter to $dateTrunc")
	}
	return dateTruncExpr{a}, nil
}

func (e dateTruncExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, ok, err := evalAll(ctx, e.a, "date", "unit", "binSize", "timezone", "startOfWeek")
	if !ok {
		return nullOr(err)
	}
	ms, isDate := dateMillis(v["date"])
	if !isDate {
		return Missing, errorf(codeTruncDateType, "$dateTrunc requires 'date' to be a date, but got %s", TypeName(v["date"]))
	}
	unit, err := dateUnitOf(v["unit"], "$dateTrunc", codeUnitType, codeUnitValue)
	if err != nil {
		return Missing, err
	}
	binSize := int64(1)
	if b, given := v["binSize"]; given {
		n, integral := integral64(b)
		if !integral {
			return Missing, errorf(codeTruncBinSizeType, "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '%s' of type %s", b, TypeName(b))
		}
		if n <= 0 {
			return Missing, errorf(codeTruncBinSizeValue, "$dateTrunc requires 'binSize' to be greater than 0, but got value %d", n)
		}
		binSize = n
	}
	z, err := zoneOf(v["timezone"])
	if err != nil {
		return Missing, err
	}
	sow := 7
	if sw, given := v["startOfWeek"]; given && unit == unitWeek {
		if sow, err = startOfWeekOf(sw, "$dateTrunc"); err != nil {
			return Missing, err
		}
	}
	r, err := dateTrunc(ms, unit, binSize, z, sow)
	if err != nil {
		return Missing, err
	}
	return Date(r), nil
}

// dateTruncRef is 2000-01-01T00:00:00Z, the origin of $dateTrunc's bins.
const dateTruncRef = 946684800000

func dateTrunc(ms int64, unit dateUnit, binSize int64, z dateZone, sow int) (int64, error) {
	ref := dateTruncRef - int64(z.offsetAt(dateTruncRef))*1000
	if per, fixed := unitMillis[unit]; fixed {
		bin := binSize * per
		if bin/per != binSize {
			return 0, errorf(codeTruncOverflow, "dateTrunc overflowed")
		}
		rem := (ms - ref) % bin
		if rem < 0 {
			rem += bin
		}
		return ms - rem, nil
	}
	if binSize > 100_000_000_000 {
		return 0, errorf(codeTruncBinSizeRange, "dateTrunc unsupported binSize value")
	}
	refDay := 1
	if unit == unitWeek {
		// 2000-01-01 was a Saturday (ISO 6): move to the first day of a
		// week on or after it; no DST change happens that early in January.
		adjust := (7 - (6-sow+7)%7) % 7
		ref += int64(adjust) * 86400000
		refDay += adjust
	}
	refT := time.Date(2000, 1, refDay, 0, 0, 0, 0, time.UTC)
	dist := dateDiffUnits(refT, wallClock(z.localTime(ms)), unit, sow)
	rem := dist % binSize
	if rem < 0 {
		rem += binSize
	}
	return dateAdd(ref, unit, dist-rem, z)
}

// $tsSecond and $tsIncrement: a Timestamp's seconds or increment, as a long.
func evalTSPart(code mongoerr.Code, part func(t, i uint32) int64) func(string, []bsoncore.Value) (bsoncore.Value, error) {
	return func(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
		v := vals[0]
		if IsNullish(v) {
			return Null, nil
		}
		t, i, ok := v.TimestampOK()
		if !ok {
			return Missing, errorf(code, "Argument to %s must be a timestamp, but is %s", op, TypeName(v))
		}
		return Int64(part(t, i)), nil
	}
}
