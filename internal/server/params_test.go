package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestGetParameterForHarnesses asks for the parameters drivers' test
// harnesses read, checking each one's BSON type and value.
func TestGetParameterForHarnesses(t *testing.T) {
	s := startTestCommandsServer(t)
	admin := s.client(t).Database("admin")
	ctx := context.Background()
	for _, tc := range []struct {
		param string
		typ   bson.Type
		check func(bson.RawValue) bool
	}{
		{"enableTestCommands", bson.TypeBoolean, func(v bson.RawValue) bool { return v.Boolean() }},
		{"quiet", bson.TypeBoolean, func(v bson.RawValue) bool { return !v.Boolean() }},
		{"authenticationMechanisms", bson.TypeArray, func(v bson.RawValue) bool { vals, _ := v.Array().Values(); return len(vals) == 0 }},
		{"featureCompatibilityVersion", bson.TypeEmbeddedDocument, func(v bson.RawValue) bool {
			return v.Document().Lookup("version").StringValue() == "7.0"
		}},
	} {
		raw, err := admin.RunCommand(ctx, bson.D{{"getParameter", 1}, {tc.param, 1}}).Raw()
		if err != nil {
			t.Errorf("getParameter %s: %v", tc.param, err)
			continue
		}
		v := raw.Lookup(tc.param)
		if v.Type != tc.typ || !tc.check(v) {
			t.Errorf("getParameter %s = %s (%s), want type %s", tc.param, v, v.Type, tc.typ)
		}
	}

	all, err := admin.RunCommand(ctx, bson.D{{"getParameter", "*"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"enableTestCommands", "featureCompatibilityVersion", "quiet", "authenticationMechanisms", "cursorTimeoutMillis"} {
		if _, err := all.LookupErr(p); err != nil {
			t.Errorf("getParameter '*' lacks %s", p)
		}
	}

	details, err := admin.RunCommand(ctx, bson.D{{"getParameter", bson.D{{"showDetails", true}}}, {"enableTestCommands", 1}, {"cursorTimeoutMillis", 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		param            string
		runtime, startup bool
	}{{"enableTestCommands", false, true}, {"cursorTimeoutMillis", true, true}} {
		d := details.Lookup(tc.param).Document()
		if d.Lookup("settableAtRuntime").Boolean() != tc.runtime || d.Lookup("settableAtStartup").Boolean() != tc.startup {
			t.Errorf("showDetails %s = %s", tc.param, d)
		}
	}
	if err := admin.RunCommand(ctx, bson.D{{"setParameter", 1}, {"enableTestCommands", 0}}).Err(); commandCode(err) != 20 {
		t.Errorf("setParameter enableTestCommands at runtime: %v, want IllegalOperation", err)
	}
}

func TestSetFeatureCompatibilityVersion(t *testing.T) {
	s := startServer(t)
	admin := s.client(t).Database("admin")
	ctx := context.Background()
	for _, tc := range []struct {
		cmd  bson.D
		code int32 // 0: ok
	}{
		{bson.D{{"setFeatureCompatibilityVersion", "7.0"}, {"confirm", true}}, 0},
		{bson.D{{"setFeatureCompatibilityVersion", "7.0"}}, 7369100},
		{bson.D{{"setFeatureCompatibilityVersion", "6.0"}, {"confirm", true}}, 4926900},
		{bson.D{{"setFeatureCompatibilityVersion", "8.0"}, {"confirm", true}}, 4926900},
		{bson.D{{"setFeatureCompatibilityVersion", 7}, {"confirm", true}}, 14},
	} {
		raw, err := rawReply(ctx, admin, tc.cmd)
		code := int32(0)
		if err != nil {
			code = raw.Lookup("code").Int32()
		}
		if code != tc.code {
			t.Errorf("%v: code %d (%v), want %d", tc.cmd, code, err, tc.code)
		}
	}
	var got struct {
		FCV struct{ Version string } `bson:"featureCompatibilityVersion"`
	}
	if err := admin.RunCommand(ctx, bson.D{{"getParameter", 1}, {"featureCompatibilityVersion", 1}}).Decode(&got); err != nil || got.FCV.Version != "7.0" {
		t.Fatalf("featureCompatibilityVersion after setFCV: %+v %v", got, err)
	}
}

// TestGetCmdLineOptsShowsSetParameter: harnesses (PyMongo's) read
// parsed.setParameter.enableTestCommands to know test commands are on.
func TestGetCmdLineOptsShowsSetParameter(t *testing.T) {
	s := startTestCommandsServer(t)
	raw, err := s.client(t).Database("admin").RunCommand(context.Background(), bson.D{{"getCmdLineOpts", 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if v := raw.Lookup("parsed", "setParameter", "enableTestCommands"); v.Type != bson.TypeString || v.StringValue() != "1" {
		t.Fatalf("getCmdLineOpts = %s", raw)
	}
}
