package keys

import (
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOpenAndLookup(t *testing.T) {
	live, liveRec := minted(t, 1, ModeLive, func(r *Record) { r.Partner = "Acme" })
	test, testRec := minted(t, 2, ModeTest, nil)
	// A record claiming mode test for a svc_live_ key, and the reverse.
	liveAsTest, ltRec := minted(t, 3, ModeLive, func(r *Record) { r.Mode = ModeTest })
	testAsLive, tlRec := minted(t, 4, ModeTest, func(r *Record) { r.Mode = ModeLive })
	// A key of the longest accepted length (from another tool).
	longest := PrefixLive + strings.Repeat("L", MaxTokenLen-len(PrefixLive))
	_, longRec := minted(t, 5, ModeLive, func(r *Record) {
		d := Digest(longest)
		r.SHA256 = hex.EncodeToString(d[:])
	})
	s, err := Open(keyFile(t, liveRec, testRec, ltRec, tlRec, longRec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := s.Lookup(longest); !ok || k.ID != longRec.ID {
		t.Errorf("Lookup(longest) = %+v, %v", k, ok)
	}
	if !s.Usable() || s.Len() != 5 {
		t.Fatalf("Usable = %v, Len = %d", s.Usable(), s.Len())
	}
	k, ok := s.Lookup(live)
	if !ok || k.ID != liveRec.ID || k.Mode != ModeLive || k.Brand != "aurora" || k.Partner != "Acme" {
		t.Fatalf("Lookup(live) = %+v, %v", k, ok)
	}
	if k, ok := s.Lookup(test); !ok || k.ID != testRec.ID || k.Mode != ModeTest {
		t.Fatalf("Lookup(test) = %+v, %v", k, ok)
	}
	secret := live[len(PrefixLive):]
	refused := map[string]string{
		"live key on a test record":        liveAsTest,
		"test key on a live record":        testAsLive,
		"same secret, other prefix":        PrefixTest + secret,
		"unknown key":                      PrefixLive + strings.Repeat("A", 32),
		"bad format":                       "svc_prod_" + secret,
		"short":                            PrefixLive + secret[:23],
		"empty":                            "",
		"key with trailing space":          live + " ",
		"over the length cap, digest kept": PrefixLive + strings.Repeat("a", MaxTokenLen),
	}
	for name, token := range refused {
		if k, ok := s.Lookup(token); ok || k != nil {
			t.Errorf("%s: Lookup = %+v, true; want refused", name, k)
		}
	}
}

func TestValidFormat(t *testing.T) {
	a24 := strings.Repeat("a", 24)
	tests := map[string]bool{
		PrefixLive + a24: true,
		PrefixTest + a24: true,
		PrefixLive + "aZ09" + strings.Repeat("x", 20): true,
		PrefixLive + a24[:23]:                         false,
		PrefixLive:                                    false,
		"svc_prod_" + a24:                             false,
		"SVC_LIVE_" + a24:                             false,
		PrefixLive + a24 + "-":                        false,
		PrefixLive + a24 + "é":                        false,
		PrefixLive + a24 + "_":                        false,
		" " + PrefixLive + a24:                        false,
		PrefixLive + strings.Repeat("a", MaxTokenLen-len(PrefixLive)):   true,
		PrefixLive + strings.Repeat("a", MaxTokenLen-len(PrefixLive)+1): false,
	}
	for token, want := range tests {
		if got := ValidFormat(token); got != want {
			t.Errorf("ValidFormat(%q) = %v, want %v", token, got, want)
		}
	}
}

func TestOpenFailures(t *testing.T) {
	dir := t.TempDir()
	missing := dir + "/nope.json"
	if _, err := Open(missing, Options{}); err == nil || !strings.Contains(err.Error(), missing) ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing file: %v", err)
	}
	bad := dir + "/bad.json"
	writeFile(t, bad, []byte(`{"keys":[{"id":"key_x"}]}`))
	if _, err := Open(bad, Options{}); err == nil || !strings.Contains(err.Error(), bad) ||
		!strings.Contains(err.Error(), "keys[0] (key_x): sha256") {
		t.Errorf("bad file: %v", err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: %v", err)
	}
}

func TestEmptyFileIsNotUsable(t *testing.T) {
	log, buf := newLogger()
	s, err := Open(keyFile(t), Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if s.Usable() || s.Len() != 0 {
		t.Errorf("Usable = %v, Len = %d; want false, 0", s.Usable(), s.Len())
	}
	if !strings.Contains(buf.String(), "level=WARN msg=\"keys loaded\"") {
		t.Errorf("log = %q; want a warning", buf)
	}
	var zero Store
	if _, ok := zero.Lookup(PrefixLive + strings.Repeat("a", 24)); ok || zero.Usable() {
		t.Error("zero Store found a key")
	}
}

func TestKeyRules(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	type rec = func(*Record)
	tokens := map[string]string{}
	var recs []Record
	add := func(name string, seed uint64, edit rec) {
		token, r := minted(t, seed, ModeLive, edit)
		tokens[name] = token
		recs = append(recs, r)
	}
	add("expired", 1, func(r *Record) { r.ExpiresAt = at(-time.Second) })
	add("expires now", 2, func(r *Record) { r.ExpiresAt = at(0) })
	add("expires later", 3, func(r *Record) { r.ExpiresAt = at(time.Hour) })
	add("suspended", 4, func(r *Record) { r.Status = StatusSuspended })
	add("all scopes", 5, func(r *Record) { r.Scopes = nil })
	add("no scopes", 6, func(r *Record) { r.Scopes = []string{} })
	add("two properties", 7, func(r *Record) { r.Properties = []string{strings.ToUpper(propA), propB} })
	s, err := Open(keyFile(t, recs...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *Key {
		k, ok := s.Lookup(tokens[name])
		if !ok {
			t.Fatalf("%s: not found", name)
		}
		return k
	}
	if !get("expired").Expired(now) || !get("expires now").Expired(now) || get("expires later").Expired(now) {
		t.Error("Expired wrong around the expiry")
	}
	if get("suspended").Expired(now) || !get("suspended").Suspended || get("expired").Suspended {
		t.Error("no expiry or suspension wrong")
	}
	if k := get("all scopes"); !k.HasScope(ScopePropertiesRead) || !k.HasScope("anything:else") {
		t.Error("absent scopes should grant every scope")
	}
	if k := get("no scopes"); k.HasScope(ScopePropertiesRead) {
		t.Error("empty scopes should grant none")
	}
	if k := get("suspended"); !k.HasScope(ScopePropertiesRead) || k.HasScope("properties:write") {
		t.Error("listed scopes should grant exactly those")
	}
	if k := get("suspended"); !k.AllProperties() || !k.CanSee(propA) {
		t.Error(`["*"] should grant every property`)
	}
	k := get("two properties")
	if k.AllProperties() || !k.CanSee(propA) || !k.CanSee(propB) || k.CanSee("00000000-0000-4000-8000-000000000000") {
		t.Error("a property list should grant exactly those ids")
	}
}

func TestReload(t *testing.T) {
	old, oldRec := minted(t, 1, ModeLive, nil)
	fresh, freshRec := minted(t, 2, ModeLive, nil)
	path := keyFile(t, oldRec)
	log, buf := newLogger()
	var mu sync.Mutex
	var results []bool
	s, err := Open(path, Options{Logger: log, OnReload: func(ok bool) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, ok)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `msg="keys loaded" file=`+path+` count=1`) {
		t.Errorf("log = %q", buf)
	}

	// A bad file: rejected whole, old keys stay, the reason is logged.
	half := freshRec
	half.Mode = "prod"
	writeFile(t, path, marshalFile(t, freshRec, half))
	err = s.Reload()
	if err == nil || !strings.Contains(err.Error(), "mode") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Reload of a bad file = %v", err)
	}
	if _, ok := s.Lookup(old); !ok {
		t.Error("old key gone after a failed reload")
	}
	if _, ok := s.Lookup(fresh); ok {
		t.Error("a key of the rejected file is in force")
	}
	logged := buf.String()
	if !strings.Contains(logged, `level=ERROR msg="keys reload failed" file=`+path) ||
		!strings.Contains(logged, `mode: must be`) {
		t.Errorf("failed reload log = %q", logged)
	}

	// A missing file is a failed reload too.
	other := keyFile(t, oldRec)
	s2, err := Open(other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	if err := s2.Reload(); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Reload of a missing file = %v", err)
	}
	if _, ok := s2.Lookup(old); !ok {
		t.Error("old key gone after the file vanished")
	}

	// A good file replaces the keys.
	writeFile(t, path, marshalFile(t, freshRec))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup(old); ok {
		t.Error("removed key still in force")
	}
	if _, ok := s.Lookup(fresh); !ok {
		t.Error("new key not in force")
	}
	if !strings.Contains(buf.String(), `msg="keys reloaded" file=`+path+` count=1`) {
		t.Errorf("log = %q", buf)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(results) != 2 || results[0] || !results[1] {
		t.Errorf("OnReload calls = %v, want [false true]", results)
	}
}

// TestNoSecretInLogs: neither a key nor a digest reaches the log through
// load, reload (good and bad) or lookup.
func TestNoSecretInLogs(t *testing.T) {
	token, rec := minted(t, 9, ModeLive, nil)
	path := keyFile(t, rec)
	log, buf := newLogger()
	s, err := Open(path, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.Lookup(token)
	s.Lookup(PrefixTest + token[len(PrefixLive):])
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	// An operator pastes the raw key into the file by mistake.
	bad := rec
	bad.SHA256 = token
	writeFile(t, path, marshalFile(t, bad))
	if err := s.Reload(); err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("Reload = %v", err)
	}
	writeFile(t, path, []byte(`{"keys":[{"`+token+`":1}]}`))
	if err := s.Reload(); err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("Reload = %v", err)
	}
	s.Lookup(token)
	logged := buf.String()
	if strings.Count(logged, "\n") < 4 {
		t.Fatalf("expected load and reload records, got %q", logged)
	}
	d := Digest(token)
	secret := token[len(PrefixLive):]
	for _, leak := range []string{secret[:12], hex.EncodeToString(d[:])[:16], strings.ToUpper(hex.EncodeToString(d[:]))[:16]} {
		if strings.Contains(logged, leak) {
			t.Errorf("log holds %q: %s", leak, logged)
		}
	}
}

// BenchmarkLookup measures the per-request path: format check, SHA-256 and a
// lock-free map read, in parallel as requests run.
func BenchmarkLookup(b *testing.B) {
	const n = 1000
	recs := make([]Record, 0, n)
	tokens := make([]string, 0, n)
	for i := range n {
		token, rec := minted(b, uint64(i)+1000, ModeLive, nil)
		recs = append(recs, rec)
		tokens = append(tokens, token)
	}
	s, err := Open(keyFile(b, recs...), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("known", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := s.Lookup(tokens[i%n]); !ok {
					b.Error("key not found")
					return
				}
				i++
			}
		})
	})
	b.Run("unknown", func(b *testing.B) {
		b.ReportAllocs()
		unknown := PrefixLive + strings.Repeat("Z", 32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, ok := s.Lookup(unknown); ok {
					b.Error("unknown key found")
					return
				}
			}
		})
	})
}
