package expr_test

import (
	"testing"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// d is a date literal for the cases below.
func d(iso string) string { return `{"$date": "` + iso + `"}` }

func TestDatePartOperators(t *testing.T) {
	docDate := d("2014-01-01T08:15:39.736Z") // a Wednesday
	checkOps(t, []opCase{
		{`{"$year": ` + docDate + `}`, `2014`, 0},
		{`{"$month": ` + docDate + `}`, `1`, 0},
		{`{"$dayOfMonth": ` + docDate + `}`, `1`, 0},
		{`{"$hour": ` + docDate + `}`, `8`, 0},
		{`{"$minute": ` + docDate + `}`, `15`, 0},
		{`{"$second": ` + docDate + `}`, `39`, 0},
		{`{"$millisecond": ` + docDate + `}`, `736`, 0},
		{`{"$dayOfYear": ` + docDate + `}`, `1`, 0},
		{`{"$dayOfWeek": ` + docDate + `}`, `4`, 0},
		{`{"$week": ` + docDate + `}`, `0`, 0},
		{`{"$isoDayOfWeek": ` + docDate + `}`, `3`, 0},
		{`{"$isoWeek": ` + docDate + `}`, `1`, 0},
		{`{"$isoWeekYear": ` + d("2017-01-01T01:29:09.123Z") + `}`, `{"$numberLong": "2016"}`, 0},
		{`{"$isoWeek": ` + d("2017-01-01T01:29:09.123Z") + `}`, `52`, 0},
		{`{"$week": ` + d("2017-01-01T00:00:00Z") + `}`, `1`, 0},
		{`{"$week": ` + d("2016-12-31T00:00:00Z") + `}`, `52`, 0},
		{`{"$year": ["$date"]}`, `2020`, 0},
		{`{"$year": {"date": "$date"}}`, `2020`, 0},
		{`{"$year": {"date": "$date", "timezone": "America/New_York"}}`, `2019`, 0},
		{`{"$hour": {"date": "$date", "timezone": "+05:30"}}`, `5`, 0},
		{`{"$minute": {"date": "$date", "timezone": "+0530"}}`, `30`, 0},
		{`{"$hour": {"date": "$date", "timezone": "-03"}}`, `21`, 0},
		{`{"$hour": {"date": ` + d("2020-03-08T06:30:00Z") + `, "timezone": "America/New_York"}}`, `1`, 0},
		{`{"$hour": {"date": ` + d("2020-03-08T07:30:00Z") + `, "timezone": "America/New_York"}}`, `3`, 0},
		{`{"$year": {"$literal": {"$oid": "5ab9cbfa31c2ab715d42129e"}}}`, `2018`, 0},
		{`{"$second": {"$literal": {"$timestamp": {"t": 1670981326, "i": 1}}}}`, `46`, 0},
		{`{"$millisecond": ` + d("1969-12-31T23:59:59.999Z") + `}`, `999`, 0},
		{`{"$year": "$nope"}`, `null`, 0},
		{`{"$year": "$n"}`, `null`, 0},
		{`{"$year": {"date": "$date", "timezone": "$nope"}}`, `null`, 0},
		{`{"$year": "$s"}`, ``, 16006},
		{`{"$year": {"date": "$date", "timezone": "Mars/Olympus"}}`, ``, 40485},
		{`{"$year": {"date": "$date", "timezone": "Local"}}`, ``, 40485},
		{`{"$year": {"date": "$date", "timezone": "+5"}}`, ``, 40485},
		{`{"$year": {"date": "$date", "timezone": 5}}`, ``, 40517},
		{`{"$year": {"date": "$date", "tz": "UTC"}}`, ``, 40535},
		{`{"$year": {"timezone": "UTC"}}`, ``, 40539},
		{`{"$year": ["$date", "$date"]}`, ``, 40536},
	})
}

func TestDateToString(t *testing.T) {
	dt := d("2014-01-01T08:15:39.736Z")
	checkOps(t, []opCase{
		{`{"$dateToString": {"date": ` + dt + `}}`, `"2014-01-01T08:15:39.736Z"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "format": "%Y-%m-%d"}}`, `"2014-01-01"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "format": "%H:%M:%S:%L%z", "timezone": "America/New_York"}}`, `"03:15:39:736-0500"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "format": "%Z", "timezone": "America/New_York"}}`, `"-300"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "format": "%Z", "timezone": "+04:30"}}`, `"270"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "format": "%b %B", "timezone": "+04:30"}}`, `"Jan January"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "format": "%j %w %u %U %V %G %%"}}`, `"001 4 3 00 01 2014 %"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "timezone": "Asia/Kolkata"}}`, `"2014-01-01T13:45:39.736"`, 0},
		{`{"$dateToString": {"date": ` + dt + `, "timezone": "UTC"}}`, `"2014-01-01T08:15:39.736Z"`, 0},
		{`{"$dateToString": {"date": "$nope", "onNull": "none"}}`, `"none"`, 0},
		{`{"$dateToString": {"date": "$nope"}}`, `null`, 0},
		{`{"$dateToString": {"date": "$date", "format": "$nope"}}`, `null`, 0},
		{`{"$dateToString": {"date": "$date", "timezone": "$nope"}}`, `null`, 0},
		{`{"$dateToString": {"date": ` + d("0000-01-01T00:00:00Z") + `, "format": "%Y"}}`, `"0000"`, 0},
		{`{"$dateToString": {"date": "$s"}}`, ``, 16006},
		{`{"$dateToString": {"date": "$date", "format": "%Y%"}}`, ``, 18535},
		{`{"$dateToString": {"date": "$date", "format": "%Q"}}`, ``, 18536},
		{`{"$dateToString": {"date": "$date", "format": 5}}`, ``, 18533},
		{`{"$dateToString": {"format": "%Y"}}`, ``, 18628},
		{`{"$dateToString": {"date": "$date", "fmt": "%Y"}}`, ``, 18534},
		{`{"$dateToString": "$date"}`, ``, 18629},
		{`{"$dateToString": {"date": {"$date": {"$numberLong": "253402300800000"}}, "format": "%Y"}}`, ``, 18537},
	})
}

func TestDateFromString(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$dateFromString": {"dateString": "2017-07-04T11:56:02Z"}}`, d("2017-07-04T11:56:02Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04T11:56:02.81Z"}}`, d("2017-07-04T11:56:02.810Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04"}}`, d("2017-07-04T00:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04 11:56"}}`, d("2017-07-04T11:56:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04T11:56:02+02:00"}}`, d("2017-07-04T09:56:02Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04T11:56:02 -0500"}}`, d("2017-07-04T16:56:02Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-02-08T12:10:40.787", "timezone": "America/New_York"}}`, d("2017-02-08T17:10:40.787Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04T11:56:02Z", "timezone": "UTC"}}`, d("2017-07-04T11:56:02Z"), 0},
		{`{"$dateFromString": {"dateString": "15-06-2018", "format": "%d-%m-%Y"}}`, d("2018-06-15T00:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "06/15/2018 10:30", "format": "%m/%d/%Y %H:%M"}}`, d("2018-06-15T10:30:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2018-166", "format": "%Y-%j"}}`, d("2018-06-15T00:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-W06-3", "format": "%G-W%V-%u"}}`, d("2017-02-08T00:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "8 Feb 2017", "format": "%d %b %Y"}}`, d("2017-02-08T00:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-02-08 12:00 +0100", "format": "%Y-%m-%d %H:%M %z"}}`, d("2017-02-08T11:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-02-08 12:00 -300", "format": "%Y-%m-%d %H:%M %Z"}}`, d("2017-02-08T17:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2020-03-08 02:30", "timezone": "America/New_York"}}`, d("2020-03-08T07:30:00Z"), 0},
		{`{"$dateFromString": {"dateString": "2020-11-01 01:30", "timezone": "America/New_York"}}`, d("2020-11-01T05:30:00Z"), 0},
		// jstests/aggregation/expressions/date_from_string.js: zones after the time.
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 GMT"}}`, d("2017-07-14T12:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 GMT+00:00"}}`, d("2017-07-14T12:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 GMT+02"}}`, d("2017-07-14T10:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771+03"}}`, d("2017-07-14T09:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771+0330"}}`, d("2017-07-14T08:32:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 UTC"}}`, d("2017-07-14T12:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 CEST"}}`, d("2017-07-14T10:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 EST"}}`, d("2017-07-14T17:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 PDT"}}`, d("2017-07-14T19:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 A"}}`, d("2017-07-14T11:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 L"}}`, d("2017-07-14T01:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 P"}}`, d("2017-07-14T15:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 Z"}}`, d("2017-07-14T12:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 CEST", "format": "%Y-%m-%dT%H:%M:%S.%L%z"}}`, d("2017-07-14T10:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 GMT+02:00", "format": "%Y-%m-%dT%H:%M:%S.%L%z"}}`, d("2017-07-14T10:02:44.771Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04 12:48:07 GMT+0545"}}`, d("2017-07-04T07:03:07Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04T11:56.02"}}`, d("2017-07-04T11:56:02Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-04T11:56.02.813", "timezone": "+01:00"}}`, d("2017-07-04T10:56:02.813Z"), 0},
		{`{"$dateFromString": {"dateString": "4/26/1992:+0445", "format": "%m/%d/%Y:%z"}}`, d("1992-04-25T19:15:00Z"), 0},
		{`{"$dateFromString": {"dateString": "4/26/1992:+285", "format": "%m/%d/%Y:%Z"}}`, d("1992-04-25T19:15:00Z"), 0},
		{`{"$dateFromString": {"dateString": "1992 % 04 % 26", "format": "%Y %% %m %% %d"}}`, d("1992-04-26T00:00:00Z"), 0},
		{`{"$dateFromString": {"dateString": "1960-07-10T12:35:37.513", "timezone": "Europe/London"}}`, d("1960-07-10T11:35:37.513Z"), 0},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 XYZ"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "2017-07-14T12:02:44.771 EST", "timezone": "America/New_York"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "$nope"}}`, `null`, 0},
		{`{"$dateFromString": {"dateString": "$nope", "onNull": 0}}`, `0`, 0},
		{`{"$dateFromString": {"dateString": "2017-07-04", "timezone": "$nope"}}`, `null`, 0},
		{`{"$dateFromString": {"dateString": "garbage", "onError": "bad"}}`, `"bad"`, 0},
		{`{"$dateFromString": {"dateString": 5, "onError": "bad"}}`, `"bad"`, 0},
		{`{"$dateFromString": {"dateString": "garbage"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "2017-02-30"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "2017-02-08T25:00:00"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "2017-07-04Z", "timezone": "Europe/London"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "12:30", "format": "%H:%M"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "2017-07-04x", "format": "%Y-%m-%d"}}`, ``, 241},
		{`{"$dateFromString": {"dateString": "2017-07-04", "timezone": "Nowhere/Land", "onError": 1}}`, ``, 40485},
		{`{"$dateFromString": {"dateString": "2017", "format": "%w"}}`, ``, 18536},
		{`{"$dateFromString": {"dateString": "2017", "format": 1}}`, ``, 40684},
		{`{"$dateFromString": {"format": "%Y"}}`, ``, 40542},
		{`{"$dateFromString": {"dateString": "2017", "x": 1}}`, ``, 40541},
		{`{"$dateFromString": "2017"}`, ``, 40540},
	})
}

func TestDateParts(t *testing.T) {
	dt := d("2017-01-01T01:29:09.123Z")
	checkOps(t, []opCase{
		{`{"$dateToParts": {"date": ` + dt + `}}`, `{"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}`, 0},
		{`{"$dateToParts": {"date": ` + dt + `, "iso8601": true}}`, `{"isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}`, 0},
		{`{"$dateToParts": {"date": ` + dt + `, "timezone": "America/New_York"}}`, `{"year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9, "millisecond": 123}`, 0},
		{`{"$dateToParts": {"date": "$nope"}}`, `null`, 0},
		{`{"$dateToParts": {"date": "$date", "iso8601": 1}}`, ``, 40521},
		{`{"$dateToParts": {"date": "$s"}}`, ``, 16006},
		{`{"$dateToParts": {"timezone": "UTC"}}`, ``, 40522},
		{`{"$dateToParts": {"date": "$date", "x": 1}}`, ``, 40520},
		{`{"$dateToParts": "$date"}`, ``, 40524},

		{`{"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12}}`, d("2017-02-08T12:00:00Z"), 0},
		{`{"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12}}`, d("2017-02-08T12:00:00Z"), 0},
		{`{"$dateFromParts": {"year": 2016, "month": 12, "day": 31, "hour": 23, "minute": 46, "second": 12, "timezone": "America/New_York"}}`, d("2017-01-01T04:46:12Z"), 0},
		{`{"$dateFromParts": {"year": 2017, "month": 14, "day": 1, "hour": 12}}`, d("2018-02-01T12:00:00Z"), 0},
		{`{"$dateFromParts": {"year": 2017, "month": 0, "day": 1}}`, d("2016-12-01T00:00:00Z"), 0},
		{`{"$dateFromParts": {"year": 2017, "month": 1, "day": 0}}`, d("2016-12-31T00:00:00Z"), 0},
		{`{"$dateFromParts": {"year": 2017, "millisecond": 1500, "second": -1}}`, d("2017-01-01T00:00:00.500Z"), 0},
		{`{"$dateFromParts": {"year": 2017.0, "month": {"$numberDecimal": "3"}}}`, d("2017-03-01T00:00:00Z"), 0},
		{`{"$dateFromParts": {"year": 2020, "month": 3, "day": 8, "hour": 2, "minute": 30, "timezone": "America/New_York"}}`, d("2020-03-08T07:30:00Z"), 0},
		{`{"$dateFromParts": {"year": 2020, "month": 3, "day": 8, "hour": 2, "timezone": "+05:30"}}`, d("2020-03-07T20:30:00Z"), 0},
		{`{"$dateFromParts": {"year": "$nope"}}`, `null`, 0},
		{`{"$dateFromParts": {"year": 2017, "hour": null}}`, `null`, 0},
		{`{"$dateFromParts": {"year": 2017, "month": 1.5}}`, ``, 40515},
		{`{"$dateFromParts": {"year": 2017, "month": 40000}}`, ``, 31034},
		{`{"$dateFromParts": {"year": 10000}}`, ``, 40523},
		{`{"$dateFromParts": {"year": 0}}`, ``, 40523},
		{`{"$dateFromParts": {"isoWeekYear": 0}}`, ``, 31095},
		{`{"$dateFromParts": {"month": 1}}`, ``, 40516},
		{`{"$dateFromParts": {"year": 2017, "isoWeek": 1}}`, ``, 40489},
		{`{"$dateFromParts": {"isoWeekYear": 2017, "day": 1}}`, ``, 40525},
		{`{"$dateFromParts": {"year": 2017, "days": 1}}`, ``, 40518},
		{`{"$dateFromParts": 2017}`, ``, 40519},
	})
}

func TestDateArithmetic(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$dateAdd": {"startDate": ` + d("2020-11-30T12:10:05Z") + `, "unit": "day", "amount": 1}}`, d("2020-12-01T12:10:05Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2020-10-24T18:10:00Z") + `, "unit": "hour", "amount": 24, "timezone": "Europe/Paris"}}`, d("2020-10-25T18:10:00Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2020-10-24T18:10:00Z") + `, "unit": "day", "amount": 1, "timezone": "Europe/Paris"}}`, d("2020-10-25T19:10:00Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2021-01-30T23:30:00Z") + `, "unit": "month", "amount": 1, "timezone": "Europe/Paris"}}`, d("2021-02-27T23:30:00Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2020-12-31T12:10:05Z") + `, "unit": "week", "amount": 1}}`, d("2021-01-07T12:10:05Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2020-12-31T12:10:05Z") + `, "unit": "millisecond", "amount": 1050}}`, d("2020-12-31T12:10:06.050Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2020-01-31T00:00:00Z") + `, "unit": "month", "amount": 1}}`, d("2020-02-29T00:00:00Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2020-02-29T00:00:00Z") + `, "unit": "year", "amount": 1}}`, d("2021-02-28T00:00:00Z"), 0},
		{`{"$dateAdd": {"startDate": ` + d("2020-01-15T00:00:00Z") + `, "unit": "quarter", "amount": 1}}`, d("2020-04-15T00:00:00Z"), 0},
		{`{"$dateSubtract": {"startDate": ` + d("2020-12-31T12:10:05Z") + `, "unit": "year", "amount": 1}}`, d("2019-12-31T12:10:05Z"), 0},
		{`{"$dateSubtract": {"startDate": ` + d("2020-12-31T12:10:05Z") + `, "unit": "quarter", "amount": 2}}`, d("2020-06-30T12:10:05Z"), 0},
		{`{"$dateSubtract": {"startDate": ` + d("2020-12-31T12:10:05Z") + `, "unit": "month", "amount": 3, "timezone": "Europe/Paris"}}`, d("2020-09-30T11:10:05Z"), 0},
		{`{"$dateSubtract": {"startDate": ` + d("2021-01-31T03:00:00Z") + `, "unit": "month", "amount": 2}}`, d("2020-11-30T03:00:00Z"), 0},
		{`{"$dateSubtract": {"startDate": ` + d("2021-01-31T03:00:00Z") + `, "unit": "month", "amount": 2, "timezone": "America/New_York"}}`, d("2020-12-01T03:00:00Z"), 0},
		{`{"$dateSubtract": {"startDate": ` + d("2020-12-31T12:10:05Z") + `, "unit": "second", "amount": 125}}`, d("2020-12-31T12:08:00Z"), 0},
		{`{"$dateAdd": {"startDate": "$nope", "unit": "day", "amount": 1}}`, `null`, 0},
		{`{"$dateAdd": {"startDate": "$date", "unit": "day", "amount": null}}`, `null`, 0},
		{`{"$dateAdd": {"unit": "second", "amount": 120}}`, ``, 5166402},
		{`{"$dateAdd": {"startDate": "$date", "units": "day", "amount": 1}}`, ``, 5166401},
		{`{"$dateAdd": "$date"}`, ``, 5166400},
		{`{"$dateSubtract": {"startDate": "myBirthDate", "unit": "year", "amount": 10}}`, ``, 5166403},
		{`{"$dateAdd": {"startDate": "$date", "unit": 1, "amount": 10}}`, ``, 5166404},
		{`{"$dateAdd": {"startDate": "$date", "unit": "epoch", "amount": 10}}`, ``, 9},
		{`{"$dateSubtract": {"startDate": "$date", "unit": "year", "amount": 1.001}}`, ``, 5166405},
		{`{"$dateSubtract": {"startDate": "$date", "unit": "year", "amount": 1, "timezone": "Unknown"}}`, ``, 40485},
		{`{"$dateAdd": {"startDate": "$date", "unit": "year", "amount": {"$numberLong": "1000000000"}}}`, ``, 5976500},

		{`{"$dateDiff": {"startDate": ` + d("2020-11-01T18:23:36Z") + `, "endDate": ` + d("2020-11-02T00:00:00Z") + `, "unit": "hour"}}`, `{"$numberLong": "6"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2020-11-01T18:23:36Z") + `, "endDate": ` + d("2020-11-02T00:00:00Z") + `, "unit": "hour", "timezone": "America/New_York"}}`, `{"$numberLong": "6"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2020-12-31T23:59:59Z") + `, "endDate": ` + d("2021-01-01T00:00:01Z") + `, "unit": "year"}}`, `{"$numberLong": "1"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2020-12-31T23:59:59Z") + `, "endDate": ` + d("2021-01-01T00:00:01Z") + `, "unit": "second"}}`, `{"$numberLong": "2"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2020-12-31T23:59:59Z") + `, "endDate": ` + d("2021-01-01T00:00:01Z") + `, "unit": "quarter"}}`, `{"$numberLong": "1"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2020-12-31T23:59:59Z") + `, "endDate": ` + d("2021-01-01T00:00:01Z") + `, "unit": "millisecond"}}`, `{"$numberLong": "2000"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2021-01-24T18:23:36Z") + `, "endDate": ` + d("2021-01-25T02:23:36Z") + `, "unit": "week", "startOfWeek": "MONDAY"}}`, `{"$numberLong": "1"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2021-01-24T18:23:36Z") + `, "endDate": ` + d("2021-01-25T02:23:36Z") + `, "unit": "week"}}`, `{"$numberLong": "0"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2021-01-17T05:00:00Z") + `, "endDate": ` + d("2021-01-17T04:59:00Z") + `, "unit": "week", "timezone": "America/New_York", "startOfWeek": "sunday"}}`, `{"$numberLong": "-1"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2020-03-08T00:00:00-05:00") + `, "endDate": ` + d("2020-03-09T00:00:00-04:00") + `, "unit": "hour", "timezone": "America/New_York"}}`, `{"$numberLong": "23"}`, 0},
		{`{"$dateDiff": {"startDate": ` + d("2020-03-08T00:00:00-05:00") + `, "endDate": ` + d("2020-03-09T00:00:00-04:00") + `, "unit": "day", "timezone": "America/New_York"}}`, `{"$numberLong": "1"}`, 0},
		{`{"$dateDiff": {"startDate": "$nope", "endDate": 1, "unit": "century"}}`, `null`, 0},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "week", "startOfWeek": null}}`, `null`, 0},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "hour", "startOfWeek": 1}}`, `{"$numberLong": "0"}`, 0},
		{`{"$dateDiff": {"startDate": "string", "endDate": "$date", "unit": "hour"}}`, ``, 5166307},
		{`{"$dateDiff": {"startDate": "$date", "endDate": 1, "unit": "hour"}}`, ``, 5166307},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": 5}}`, ``, 5439013},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "decade"}}`, ``, 5439014},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "hour", "timezone": 1}}`, ``, 40517},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "week", "startOfWeek": 1}}`, ``, 5439015},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "week", "startOfWeek": "FRIDIE"}}`, ``, 5439016},
		{`{"$dateDiff": {"startDate": "$date", "unit": "week"}}`, ``, 5166304},
		{`{"$dateDiff": {"unit": "week"}}`, ``, 5166303},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date"}}`, ``, 5166305},
		{`{"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "day", "x": 1}}`, ``, 5166302},
		{`{"$dateDiff": "$date"}`, ``, 5166301},

		{`{"$dateTrunc": {"date": ` + d("2020-11-01T18:23:36Z") + `, "unit": "hour", "binSize": 2}}`, d("2020-11-01T18:00:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2021-12-01T18:23:36Z") + `, "unit": "hour", "binSize": 4, "timezone": "America/New_York"}}`, d("2021-12-01T17:00:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2021-02-15T18:23:36Z") + `, "unit": "week"}}`, d("2021-02-14T00:00:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2000-01-30T18:00:00Z") + `, "unit": "week", "binSize": 2, "timezone": "America/New_York", "startOfWeek": "mon"}}`, d("2000-01-17T05:00:00Z"), 0},
		{`{"$dateTrunc": {"date": {"$literal": {"$oid": "507c7f79bcf86cd7994f6c0e"}}, "unit": "minute", "binSize": 10}}`, d("2012-10-15T21:20:00Z"), 0},
		{`{"$dateTrunc": {"date": {"$literal": {"$timestamp": {"t": 1350336377, "i": 0}}}, "unit": "second", "binSize": 10}}`, d("2012-10-15T21:26:10Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2020-01-30T18:59:00Z") + `, "unit": "minute", "binSize": {"$numberDecimal": "15"}}}`, d("2020-01-30T18:45:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2020-01-30T18:59:00.003Z") + `, "unit": "millisecond", "binSize": 1000}}`, d("2020-01-30T18:59:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2020-01-30T18:59:00Z") + `, "unit": "year", "timezone": "GMT", "startOfWeek": 1}}`, d("2020-01-01T00:00:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2020-05-18T14:10:30Z") + `, "unit": "month", "binSize": 6}}`, d("2020-01-01T00:00:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("2020-05-18T14:10:30Z") + `, "unit": "quarter", "timezone": "America/New_York"}}`, d("2020-04-01T04:00:00Z"), 0},
		{`{"$dateTrunc": {"date": ` + d("1999-05-19T14:10:30Z") + `, "unit": "day", "binSize": 3}}`, d("1999-05-18T00:00:00Z"), 0},
		{`{"$dateTrunc": {"date": "$nope", "unit": "H", "binSize": "x"}}`, `null`, 0},
		{`{"$dateTrunc": {"date": "string", "unit": "hour"}}`, ``, 5439012},
		{`{"$dateTrunc": {"date": "$date", "unit": 1}}`, ``, 5439013},
		{`{"$dateTrunc": {"date": "$date", "unit": "century"}}`, ``, 5439014},
		{`{"$dateTrunc": {"date": "$date", "unit": "hour", "binSize": 2.5}}`, ``, 5439017},
		{`{"$dateTrunc": {"date": "$date", "unit": "hour", "binSize": 0}}`, ``, 5439018},
		{`{"$dateTrunc": {"date": "$date", "unit": "week", "startOfWeek": "FRIDIE"}}`, ``, 5439016},
		{`{"$dateTrunc": "A"}`, ``, 5439007},
		{`{"$dateTrunc": {"endDate": 1}}`, ``, 5439008},
		{`{"$dateTrunc": {"unit": "week"}}`, ``, 5439009},
		{`{"$dateTrunc": {"date": "$date"}}`, ``, 5439010},

		{`{"$tsSecond": {"$literal": {"$timestamp": {"t": 1622731060, "i": 10}}}}`, `{"$numberLong": "1622731060"}`, 0},
		{`{"$tsIncrement": {"$literal": {"$timestamp": {"t": 1622731060, "i": 10}}}}`, `{"$numberLong": "10"}`, 0},
		{`{"$tsSecond": "$nope"}`, `null`, 0},
		{`{"$tsSecond": "$date"}`, ``, 5687301},
		{`{"$tsIncrement": 1}`, ``, 5687302},
	})
}

// BenchmarkDateOperators compares a date part and $dateToString in UTC with
// the same in an Olson zone (cached location lookup) and a UTC offset.
func BenchmarkDateOperators(b *testing.B) {
	doc := parseJSONB(b, `{"d": {"$date": "2020-03-08T07:30:00Z"}}`)
	for _, bc := range []struct{ name, expr string }{
		{"year/utc", `{"$year": "$d"}`},
		{"year/olson", `{"$year": {"date": "$d", "timezone": "America/New_York"}}`},
		{"year/offset", `{"$year": {"date": "$d", "timezone": "+05:30"}}`},
		{"toString/utc", `{"$dateToString": {"date": "$d"}}`},
		{"toString/olson", `{"$dateToString": {"date": "$d", "timezone": "America/New_York"}}`},
		{"fromString/olson", `{"$dateFromString": {"dateString": "2020-03-08 02:30", "timezone": "America/New_York"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e, err := expr.Parse(parseJSONB(b, `{"e": `+bc.expr+`}`).Lookup("e"))
			if err != nil {
				b.Fatal(err)
			}
			ctx := expr.NewContext(doc)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := e.Eval(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func parseJSONB(b *testing.B, s string) bsoncore.Document {
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		b.Fatal(err)
	}
	return bsoncore.Document(raw)
}

// TestDateZoneAtParse checks that a literal time zone is resolved when the
// expression is parsed, so that an unknown one fails without any document.
func TestDateZoneAtParse(t *testing.T) {
	for _, tc := range []opCase{
		{`{"$hour": {"date": "$d", "timezone": "Nowhere/Land"}}`, ``, 40485},
		{`{"$dateToString": {"date": "$d", "timezone": "Nowhere/Land"}}`, ``, 40485},
		{`{"$dateTrunc": {"date": "$d", "unit": "day", "timezone": 7}}`, ``, 40517},
		{`{"$dateAdd": {"startDate": "$d", "unit": "day", "amount": 1, "timezone": "+25:99x"}}`, ``, 40485},
	} {
		_, err := expr.Parse(parseJSON(t, `{"e": `+tc.expr+`}`).Lookup("e"))
		if mongoerr.CodeOf(err) != tc.code {
			t.Errorf("%s: parse error %v, want code %d", tc.expr, err, tc.code)
		}
	}
	for _, ok := range []string{
		`{"$hour": {"date": "$d", "timezone": null}}`,
		`{"$hour": {"date": "$d", "timezone": "$tz"}}`,
		`{"$dateDiff": {"startDate": "$d", "endDate": "$d", "unit": "day", "timezone": "-03:30"}}`,
	} {
		if _, err := expr.Parse(parseJSON(t, `{"e": `+ok+`}`).Lookup("e")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// FuzzDateString feeds arbitrary strings, formats and zones to
// $dateFromString and $dateToString: they must fail with a MongoDB code or
// succeed, never panic, and a date printed with a format that has every
// numeric field must parse back to itself.
func FuzzDateString(f *testing.F) {
	f.Add("2017-07-04T11:56:02.813Z", "%Y-%m-%dT%H:%M:%S.%LZ", "UTC", int64(1499169362813))
	f.Add("2017-W06-3", "%G-W%V-%u", "America/New_York", int64(-1))
	f.Add("8 February 2017 12:00 +0100", "%d %B %Y %H:%M %z", "+05:30", int64(1e12))
	f.Fuzz(func(t *testing.T, s, format, tz string, ms int64) {
		doc := bsoncore.NewDocumentBuilder().AppendString("s", s).AppendString("f", format).
			AppendString("tz", tz).AppendDateTime("d", ms).Build()
		for _, src := range []string{
			`{"$dateFromString": {"dateString": "$s"}}`,
			`{"$dateFromString": {"dateString": "$s", "format": "$f", "timezone": "$tz"}}`,
			`{"$dateToString": {"date": "$d", "format": "$f", "timezone": "$tz"}}`,
			`{"$dateTrunc": {"date": "$d", "unit": "week", "binSize": 3, "timezone": "$tz"}}`,
			`{"$dateAdd": {"startDate": "$d", "unit": "month", "amount": 13, "timezone": "$tz"}}`,
		} {
			e, err := expr.Parse(parseJSON(t, `{"e": `+src+`}`).Lookup("e"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Eval(expr.NewContext(doc)); err != nil && mongoerr.CodeOf(err) == 0 {
				t.Fatalf("%s: error without a code: %v", src, err)
			}
		}
		// Round trip through a full numeric format in a valid zone, from 1900
		// on: before 1883 New York's offset (local mean time) has seconds,
		// which %z does not print.
		if ms < -2208988800000 || ms > 253402300799999 {
			return
		}
		const full = "%Y-%m-%dT%H:%M:%S.%L%z"
		round := `{"$dateFromString": {"dateString": {"$dateToString": {"date": "$d", "format": "` + full + `", "timezone": "America/New_York"}}, "format": "` + full + `"}}`
		e, err := expr.Parse(parseJSON(t, `{"e": `+round+`}`).Lookup("e"))
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.Eval(expr.NewContext(doc))
		if err != nil {
			t.Fatalf("round trip of %d: %v", ms, err)
		}
		if got, _ := v.DateTimeOK(); got != ms {
			t.Fatalf("round trip of %d gave %d", ms, got)
		}
	})
}
