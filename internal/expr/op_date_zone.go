package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"sync"
	"time"
	_ "time/tzdata" // time zones must resolve on machines without system tzdata

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Time zones and dates for the date operators. A time zone argument is an
// Olson identifier ("America/New_York") or a UTC offset ("+04:45", "-0530",
// "+03"); the date operators accept a date, a Timestamp or an ObjectId
// wherever MongoDB's Value::coerceToDate does. Local-time arithmetic follows
// timelib, the library MongoDB uses, where it differs from package time
// (a wall time inside a DST gap resolves forward, not back).

// MongoDB's codes shared by the date operators.
const (
	codeDateCoerce      = mongoerr.DateCoerce      // "can't convert from BSON type X to Date"
	codeTimezoneType    = mongoerr.TimezoneType    // timezone did not evaluate to a string
	codeUnknownTimezone = mongoerr.UnknownTimezone // unrecognized time zone identifier
	codeFailedToParse   = mongoerr.FailedToParse   // FailedToParse: an unknown unit or day name
)

// dateZone is a resolved time zone. utc is MongoDB's TimeZone::isUtcZone:
// the "UTC" identifier or a zero offset, which changes $dateToString's
// default format and lets $dateFromString accept strings that carry a zone.
type dateZone struct {
	loc *time.Location
	utc bool
}

var utcZone = dateZone{loc: time.UTC, utc: true}

// dateZoneCache holds the zones resolved so far (name -> dateZone):
// loading an Olson zone parses its zone file, and a pipeline asks for the
// same zone once per document. Unknown names are not cached, so the cache
// holds at most the Olson database plus the offsets in use.
var dateZoneCache sync.Map

// lookupZone resolves a time zone argument (MongoDB's
// TimeZoneDatabase::getTimeZone).
func lookupZone(name string) (dateZone, error) {
	if name == "UTC" {
		return utcZone, nil
	}
	if z, ok := dateZoneCache.Load(name); ok {
		return z.(dateZone), nil
	}
	var z dateZone
	if off, ok := parseUTCOffset(name); ok {
		z = dateZone{loc: time.FixedZone(name, off), utc: off == 0}
	} else {
		// "" and "Local" are package time's names for UTC and the machine's
		// zone, not Olson identifiers.
		if name == "" || name == "Local" {
			return dateZone{}, unknownZone(name)
		}
		loc, err := time.LoadLocation(name)
		if err != nil {
			return dateZone{}, unknownZone(name)
		}
		z = dateZone{loc: loc}
	}
	dateZoneCache.Store(name, z)
	return z, nil
}

func unknownZone(name string) error {
	return errorf(codeUnknownTimezone, "unrecognized time zone identifier: \"%s\"", name)
}

// parseUTCOffset reads ±HH, ±HHMM or ±HH:MM as seconds east of UTC.
func parseUTCOffset(s string) (int, bool) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	digits := func(t string) (int, bool) {
		n := 0
		for i := 0; i < len(t); i++ {
			if t[i] < '0' || t[i] > '9' {
				return 0, false
			}
			n = n*10 + int(t[i]-'0')
		}
		return n, true
	}
	var h, m int
	var ok1, ok2 = true, true
	switch len(s) {
	case 3:
		h, ok1 = digits(s[1:3])
	case 5:
		h, ok1 = digits(s[1:3])
		m, ok2 = digits(s[3:5])
	case 6:
		if s[3] != ':' {
			return 0, false
		}
		h, ok1 = digits(s[1:3])
		m, ok2 = digits(s[4:6])
	default:
		return 0, false
	}
	if !ok1 || !ok2 {
		return 0, false
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// evalZone evaluates an optional timezone argument (MongoDB's
// makeTimeZone): nil is UTC; a nullish value gives ok=false, which makes
// the operator return null.
func evalZone(ctx *Context, e Expr) (z dateZone, ok bool, err error) {
	if e == nil {
		return utcZone, true, nil
	}
	v, err := e.Eval(ctx)
	if err != nil {
		return dateZone{}, false, err
	}
	if IsNullish(v) {
		return dateZone{}, false, nil
	}
	name, isStr := stringOf(v)
	if !isStr {
		return dateZone{}, false, errorf(codeTimezoneType, "timezone must evaluate to a string, found %s", TypeName(v))
	}
	z, err = lookupZone(name)
	return z, err == nil, err
}

// dateMillis is Value::coerceToDate: a date's milliseconds, a Timestamp's
// or an ObjectId's seconds in milliseconds; ok is false for other types.
func dateMillis(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeDateTime:
		return v.DateTimeOK()
	case bsoncore.TypeTimestamp:
		t, _, ok := v.TimestampOK()
		return int64(t) * 1000, ok
	case bsoncore.TypeObjectID:
		oid, ok := v.ObjectIDOK()
		secs := int64(oid[0])<<24 | int64(oid[1])<<16 | int64(oid[2])<<8 | int64(oid[3])
		return secs * 1000, ok
	}
	return 0, false
}

// coerceDate is dateMillis with MongoDB's error for other types.
func coerceDate(v bsoncore.Value) (int64, error) {
	ms, ok := dateMillis(v)
	if !ok {
		return 0, errorf(codeDateCoerce, "can't convert from BSON type %s to Date", TypeName(v))
	}
	return ms, nil
}

// localTime is the instant ms seen in zone z.
func (z dateZone) localTime(ms int64) time.Time {
	return time.UnixMilli(ms).In(z.loc)
}

// offsetAt is z's offset from UTC, in seconds, at instant ms.
func (z dateZone) offsetAt(ms int64) int {
	_, off := z.localTime(ms).Zone()
	return off
}

// fromLocal turns a wall-clock time in z (given as a UTC time.Time whose
// fields are the wall clock) into milliseconds since the epoch, resolving
// DST gaps and overlaps as timelib does: a wall time skipped by a
// spring-forward transition moves forward by the gap, and an ambiguous one
// takes the earlier (daylight) offset.
func (z dateZone) fromLocal(wall time.Time) int64 {
	sse := wall.Unix()
	subMs := int64(wall.Nanosecond() / 1e6)
	if z.loc == time.UTC {
		return sse*1000 + subMs
	}
	cur := z.offsetSec(sse)
	afterT := time.Unix(sse-int64(cur), 0).In(z.loc)
	_, after := afterT.Zone()
	start, _ := afterT.ZoneBounds()
	adjust := -int64(cur)
	if cur != after {
		inTransition := !start.IsZero() &&
			sse-int64(after) >= start.Unix()+int64(cur-after) &&
			sse-int64(after) < start.Unix()
		if !inTransition {
			adjust = -int64(after)
		}
	}
	return (sse+adjust)*1000 + subMs
}

func (z dateZone) offsetSec(sse int64) int {
	_, off := time.Unix(sse, 0).In(z.loc).Zone()
	return off
}

// wallClock returns the wall-clock fields of t as a UTC time, the form
// fromLocal and the calendar helpers work on.
func wallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}
