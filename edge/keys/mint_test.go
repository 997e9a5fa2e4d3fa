package keys

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestMint(t *testing.T) {
	token, rec, err := Mint(seeded(1), "aurora", ModeTest, []string{strings.ToUpper(propA), propB})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, PrefixTest) || len(token) != len(PrefixTest)+32 || !ValidFormat(token) {
		t.Errorf("token %q: want svc_test_ and 32 base62 characters", token)
	}
	d := Digest(token)
	if rec.SHA256 != hex.EncodeToString(d[:]) {
		t.Error("record digest is not the token's SHA-256")
	}
	if !idPattern.MatchString(rec.ID) || len(rec.ID) != len("key_")+10 {
		t.Errorf("id %q", rec.ID)
	}
	if rec.Brand != "aurora" || rec.Mode != ModeTest || rec.Status != StatusActive || rec.ExpiresAt != nil ||
		len(rec.Scopes) != 1 || rec.Scopes[0] != ScopePropertiesRead ||
		len(rec.Properties) != 2 || rec.Properties[0] != propA || rec.Properties[1] != propB {
		t.Errorf("record = %+v", rec)
	}
	// Deterministic for a given source, different for another.
	again, rec2, _ := Mint(seeded(1), "aurora", ModeTest, []string{propA, propB})
	other, rec3, _ := Mint(seeded(2), "aurora", ModeTest, nil)
	if again != token || rec2.ID != rec.ID || other == token || rec3.ID == rec.ID {
		t.Error("Mint does not follow its randomness source")
	}
	if len(rec3.Properties) != 1 || rec3.Properties[0] != AllPropertiesGrant {
		t.Errorf("no properties given: %q, want [*]", rec3.Properties)
	}
	live, _, _ := Mint(seeded(3), "aurora", ModeLive, nil)
	if !strings.HasPrefix(live, PrefixLive) || !ValidFormat(live) {
		t.Errorf("live token %q", live)
	}
}

func TestMintRefuses(t *testing.T) {
	cases := map[string]func() error{
		"no brand":     func() error { _, _, err := Mint(seeded(1), " ", ModeLive, nil); return err },
		"bad mode":     func() error { _, _, err := Mint(seeded(1), "aurora", "prod", nil); return err },
		"bad property": func() error { _, _, err := Mint(seeded(1), "aurora", ModeLive, []string{"x"}); return err },
		"star mixed":   func() error { _, _, err := Mint(seeded(1), "aurora", ModeLive, []string{"*", propA}); return err },
		"no randomness": func() error {
			_, _, err := Mint(bytes.NewReader(make([]byte, 8)), "aurora", ModeLive, nil)
			return err
		},
	}
	for name, f := range cases {
		if f() == nil {
			t.Errorf("%s: Mint succeeded", name)
		}
	}
}

// TestRandomBase62Unbiased: bytes 248..255 are discarded, the rest map to
// b%62, so every character is equally likely.
func TestRandomBase62Unbiased(t *testing.T) {
	src := bytes.NewReader([]byte{255, 248, 0, 61, 62, 247, 10, 36, 1, 2, 3, 4, 5, 6, 7, 8})
	got, err := randomBase62(src, 6)
	if err != nil {
		t.Fatal(err)
	}
	if got != "0z0zAa" {
		t.Errorf("randomBase62 = %q, want 0z0zAa", got)
	}
}

// runNew runs RunNew and splits its output into the key and the record.
func runNew(t *testing.T, seed uint64, args ...string) (token string, rec json.RawMessage, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := RunNew(args, &out, &errOut, seeded(seed)); err != nil {
		t.Fatalf("RunNew(%q): %v (stderr %q)", args, err, errOut.String())
	}
	first, rest, _ := strings.Cut(out.String(), "\n")
	token, ok := strings.CutPrefix(first, "key: ")
	if !ok {
		t.Fatalf("first line %q, want key: ...", first)
	}
	if !json.Valid([]byte(rest)) || !strings.HasPrefix(rest, "{\n  \"id\"") {
		t.Fatalf("record %q: want indented JSON", rest)
	}
	return token, json.RawMessage(rest), errOut.String()
}

// TestRunNewRoundTrip: the printed record, pasted into a key file, loads,
// and the printed key looks up to it.
func TestRunNewRoundTrip(t *testing.T) {
	live, liveRec, warn := runNew(t, 1, "--brand", "aurora", "--mode", "live", "--partner", "Acme Channel Manager")
	test, testRec, _ := runNew(t, 2, "-brand=aurora", "-mode=test", "--properties", strings.ToUpper(propA)+", "+propB)
	if !strings.Contains(warn, "only") || strings.Count(strings.TrimSpace(warn), "\n") != 0 || strings.Contains(warn, live) {
		t.Errorf("stderr %q: want a one-line warning without the key", warn)
	}
	file := []byte(`{"keys":[` + string(liveRec) + "," + string(testRec) + "]}")
	if _, err := Parse(file); err != nil {
		t.Fatalf("printed records do not parse: %v", err)
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	writeFile(t, path, file)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var lr, tr Record
	if json.Unmarshal(liveRec, &lr) != nil || json.Unmarshal(testRec, &tr) != nil {
		t.Fatal("record does not decode")
	}
	k, ok := s.Lookup(live)
	if !ok || k.ID != lr.ID || k.Partner != "Acme Channel Manager" || k.Brand != "aurora" || k.Mode != ModeLive ||
		!k.AllProperties() || !k.HasScope(ScopePropertiesRead) || k.HasScope("other") || k.Suspended {
		t.Errorf("live key looks up to %+v, %v", k, ok)
	}
	k, ok = s.Lookup(test)
	if !ok || k.ID != tr.ID || k.Mode != ModeTest || k.AllProperties() || !k.CanSee(propA) || !k.CanSee(propB) {
		t.Errorf("test key looks up to %+v, %v", k, ok)
	}
	// Field order as in operations.md.
	order := []string{`"id"`, `"partner"`, `"sha256"`, `"brand"`, `"mode"`, `"properties"`, `"status"`, `"expiresAt": null`, `"scopes"`}
	last := -1
	for _, f := range order {
		i := strings.Index(string(liveRec), f)
		if i <= last {
			t.Errorf("field %s out of order in %s", f, liveRec)
		}
		last = i
	}
}

func TestRunNewErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no brand", []string{"--mode", "live"}, "--brand"},
		{"no mode", []string{"--brand", "aurora"}, "--mode"},
		{"bad mode", []string{"--brand", "aurora", "--mode", "prod"}, "--mode"},
		{"bad property", []string{"--brand", "aurora", "--mode", "live", "--properties", propA + ",hotel-1"}, `"hotel-1"`},
		{"empty property", []string{"--brand", "aurora", "--mode", "live", "--properties", propA + ","}, "--properties"},
		{"unknown flag", []string{"--brand", "aurora", "--mode", "live", "--colour", "x"}, "colour"},
		{"stray argument", []string{"--brand", "aurora", "--mode", "live", "extra"}, `"extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := RunNew(tt.args, &out, &errOut, seeded(1))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("RunNew = %v, want an error naming %s", err, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q: nothing may be printed on error", out.String())
			}
		})
	}
	var out, errOut bytes.Buffer
	if err := RunNew([]string{"-h"}, &out, &errOut, seeded(1)); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(errOut.String(), "usage: edge keys new") || out.Len() != 0 {
		t.Errorf("-h: err %v, stderr %q", err, errOut.String())
	}
	if err := RunNew([]string{"--brand", "a", "--mode", "live"}, io.Discard, io.Discard, bytes.NewReader(nil)); err == nil {
		t.Error("RunNew without randomness succeeded")
	}
}
