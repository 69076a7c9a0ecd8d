package catalog

import (
	"strings"
	"testing"
)

// TestValidateCommandDB checks the database names a command may name: each
// character MongoDB refuses there, and what it allows ('$', for
// "$external"; any other byte).
func TestValidateCommandDB(t *testing.T) {
	for _, c := range []struct {
		db string
		ok bool
	}{
		{"test", true},
		{"cairn_bench", true},
		{"$external", true},
		{"a-b$c", true},
		{"é", true},
		{"", false},
		{"a/b", false},
		{`a\b`, false},
		{"a.b", false},
		{"a b", false},
		{`a"b`, false},
		{"a\x00b", false},
		{".", false},
		{strings.Repeat("d", maxDBNameLen), true},
		{strings.Repeat("d", maxDBNameLen+1), false},
	} {
		err := ValidateCommandDB(c.db)
		if (err == nil) != c.ok {
			t.Errorf("ValidateCommandDB(%q) = %v, want ok=%v", c.db, err, c.ok)
		}
	}
}

// TestDBNameBannedTable: the table refuses exactly the bytes
// ValidateCommandDB's rule names, each of the 256.
func TestDBNameBannedTable(t *testing.T) {
	for b := 0; b < 256; b++ {
		name := "a" + string([]byte{byte(b)}) + "b"
		if got, want := hasDBNameBanned(name), strings.ContainsAny(name, "/\\. \"\x00"); got != want {
			t.Errorf("byte %#x: banned %v, want %v", b, got, want)
		}
	}
}
