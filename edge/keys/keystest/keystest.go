// Package keystest writes key files (docs/operations.md's keys.json) for the
// tests of every package that serves keys: one way to write them, so a
// change of the file's shape is made once. Imported by _test.go files only.
package keystest

import (
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/renameio/v2"

	"github.com/partner-edge/partner-edge/edge/keys"
)

// Write writes recs to path as a key file ({"keys": [...]}), atomically: a
// temporary file beside it renamed over it, as a deploy replaces the file,
// so a store watching path never reads half of it. R is keys.Record, or a
// raw map for a record the type cannot express.
func Write[R any](t testing.TB, path string, recs ...R) {
	t.Helper()
	if recs == nil {
		recs = []R{} // "keys": [], not null
	}
	b, err := json.Marshal(map[string]any{"keys": recs})
	if err != nil {
		t.Fatal(err)
	}
	if err := renameio.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// File writes recs to keys.json in a fresh temporary directory of t and
// returns its path.
func File[R any](t testing.TB, recs ...R) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.json")
	Write(t, path, recs...)
	return path
}

// Mint mints a key of brand in mode, granted every property, from
// crypto/rand (each call a distinct key).
func Mint(t testing.TB, brand string, mode keys.Mode) (token string, rec keys.Record) {
	t.Helper()
	token, rec, err := keys.Mint(rand.Reader, brand, mode, nil)
	if err != nil {
		t.Fatal(err)
	}
	return token, rec
}

// Live writes a key file holding one fresh live key of brand and returns
// its path and the key.
func Live(t testing.TB, brand string) (path, token string) {
	t.Helper()
	token, rec := Mint(t, brand, keys.ModeLive)
	return File(t, rec), token
}

// Open opens a key file of recs as a store (no watching).
func Open(t testing.TB, recs ...keys.Record) *keys.Store {
	t.Helper()
	s, err := keys.Open(File(t, recs...), keys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
