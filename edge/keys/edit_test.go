package keys

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// editor edits path with a fixed clock at t0 and seeded randomness.
func editor(path string, seed uint64) Editor {
	return Editor{Path: path, Now: func() time.Time { return t0 }, Random: seeded(seed)}
}

// load0600 reads path, failing unless its mode is 0600.
func load0600(t *testing.T, path string) []Record {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Parse(data)
	if err != nil {
		t.Fatalf("the written file does not load: %v", err)
	}
	return recs
}

func TestEditorAddCreatesTheFileAndTheKeyWorks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	exp := t0.Add(30 * 24 * time.Hour)
	token, rec, err := editor(path, 1).Add(NewKey{Partner: "Acme", Brand: "aurora", Mode: ModeTest,
		ExpiresAt: &exp, RateLimit: &RateLimit{PerSecond: 5, Burst: 10}, ClientID: "acme-client"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, PrefixTest) || !ValidFormat(token) {
		t.Errorf("token %q is not a test key", token)
	}
	recs := load0600(t, path)
	if len(recs) != 1 || recs[0].ID != rec.ID {
		t.Fatalf("file holds %+v, want the one record %s", recs, rec.ID)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, ok := s.Lookup(token)
	if !ok {
		t.Fatal("the minted key is not found in the written file")
	}
	if k.Partner != "Acme" || !k.ExpiresAt.Equal(exp) || k.RateLimit == nil || *k.RateLimit != (RateLimit{PerSecond: 5, Burst: 10}) ||
		k.ClientID != "acme-client" || k.Suspended || !k.HasScope(ScopePropertiesRead) || k.HasScope("bookings:write") {
		t.Errorf("key = %+v", k)
	}
	if data, _ := os.ReadFile(path); bytes.Contains(data, []byte(token)) {
		t.Error("the file holds the key itself")
	}
}

func TestEditorRefusesAnEditThatWouldNotLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	ed := editor(path, 1)
	if _, _, err := ed.Add(NewKey{Brand: "aurora", Mode: ModeLive, ClientID: "c1"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	cases := map[string]NewKey{
		"same client":      {Brand: "aurora", Mode: ModeLive, ClientID: "c1"},
		"bad scope":        {Brand: "aurora", Mode: ModeLive, Scopes: []string{"a b"}},
		"tiny rate":        {Brand: "aurora", Mode: ModeLive, RateLimit: &RateLimit{PerSecond: 1e-10, Burst: 1}},
		"no burst":         {Brand: "aurora", Mode: ModeLive, RateLimit: &RateLimit{PerSecond: 1}},
		"bad property":     {Brand: "aurora", Mode: ModeLive, Properties: []string{"nope"}},
		"no brand":         {Mode: ModeLive},
		"bad mode":         {Brand: "aurora", Mode: "prod"},
		"expiry in past":   {Brand: "aurora", Mode: ModeLive, ExpiresAt: new(t0.Add(-time.Second))},
		"client id spaces": {Brand: "aurora", Mode: ModeLive, ClientID: "a b"},
	}
	for name, k := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := ed.Add(k); err == nil {
				t.Fatal("Add succeeded")
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Error("the file changed")
			}
		})
	}
}

func TestEditorLeavesABrokenFileAlone(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	path := keyFile(t, rec)
	broken := bytes.Replace(marshalFile(t, rec), []byte(`"live"`), []byte(`"prod"`), 1)
	writeFile(t, path, broken)
	ed := editor(path, 2)
	for name, edit := range map[string]func() error{
		"add":     func() error { _, _, err := ed.Add(NewKey{Brand: "aurora", Mode: ModeLive}); return err },
		"suspend": func() error { return ed.SetStatus(rec.ID, StatusSuspended) },
		"revoke":  func() error { return ed.Revoke(rec.ID) },
		"rotate":  func() error { _, _, err := ed.Rotate(rec.ID, time.Hour, false); return err },
	} {
		err := edit()
		if err == nil || !strings.Contains(err.Error(), `mode: must be "live" or "test"`) {
			t.Errorf("%s: err = %v, want the reason the file does not load", name, err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, broken) {
		t.Error("the broken file was rewritten")
	}
	if _, err := ed.List(); err == nil {
		t.Error("List of a broken file succeeded")
	}
}

func TestEditorSuspendResumeRevoke(t *testing.T) {
	tok1, rec1 := minted(t, 1, ModeLive, nil)
	tok2, rec2 := minted(t, 2, ModeLive, nil)
	path := keyFile(t, rec1, rec2)
	ed := editor(path, 3)
	lookup := func(token string) (*Key, bool) {
		t.Helper()
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Lookup(token)
	}
	if err := ed.SetStatus(rec1.ID, StatusSuspended); err != nil {
		t.Fatal(err)
	}
	if k, _ := lookup(tok1); !k.Suspended {
		t.Error("not suspended")
	}
	if k, _ := lookup(tok2); k.Suspended {
		t.Error("the other key was suspended too")
	}
	if err := ed.SetStatus(rec1.ID, StatusActive); err != nil {
		t.Fatal(err)
	}
	if k, _ := lookup(tok1); k.Suspended {
		t.Error("not resumed")
	}
	if err := ed.Revoke(rec1.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := lookup(tok1); ok {
		t.Error("revoked key still found")
	}
	if _, ok := lookup(tok2); !ok {
		t.Error("the other key was revoked too")
	}
	for _, id := range []string{rec1.ID, "key_missing", "svc_live_notanid", ""} {
		if err := ed.Revoke(id); err == nil {
			t.Errorf("Revoke(%q) succeeded", id)
		} else if strings.Contains(err.Error(), "svc_live_") {
			t.Errorf("the error repeats a key-like argument: %v", err)
		}
	}
	if recs := load0600(t, path); len(recs) != 1 || recs[0].ID != rec2.ID {
		t.Errorf("records = %+v", recs)
	}
}

func TestEditorRotateKeepsTheGrantsAndEndsTheOldKeyAfterTheOverlap(t *testing.T) {
	farExp := t0.Add(90 * 24 * time.Hour)
	oldTok, old := minted(t, 1, ModeTest, func(r *Record) {
		r.Partner, r.Scopes, r.ClientID, r.ExpiresAt = "Acme", []string{"properties:read", "x:y"}, "acme", &farExp
		r.RateLimit = &RateLimit{PerSecond: 2, Burst: 3}
		r.Properties = []string{"5f0c6a5e-8d2b-4c1e-9a7f-1b2c3d4e5f60"}
	})
	path := keyFile(t, old)
	token, rec, err := editor(path, 2).Rotate(old.ID, 2*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if token == oldTok || rec.ID == old.ID || !strings.HasPrefix(token, PrefixTest) {
		t.Fatalf("successor %s %q is not a new test key", rec.ID, token)
	}
	recs := load0600(t, path)
	if len(recs) != 2 {
		t.Fatalf("%d records, want the old and the new", len(recs))
	}
	gotOld, gotNew := recs[0], recs[1]
	if gotOld.ExpiresAt == nil || !gotOld.ExpiresAt.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("old expiresAt = %v, want now + overlap %v", gotOld.ExpiresAt, t0.Add(2*time.Hour))
	}
	if gotOld.ClientID != "" || gotNew.ClientID != "acme" {
		t.Errorf("clientId old %q new %q: want it moved to the successor", gotOld.ClientID, gotNew.ClientID)
	}
	if gotNew.Partner != "Acme" || gotNew.Brand != old.Brand || gotNew.Mode != ModeTest ||
		strings.Join(gotNew.Properties, ",") != strings.Join(old.Properties, ",") ||
		strings.Join(gotNew.Scopes, ",") != "properties:read,x:y" || *gotNew.RateLimit != *old.RateLimit ||
		gotNew.ExpiresAt == nil || !gotNew.ExpiresAt.Equal(farExp) || gotNew.Status != StatusActive {
		t.Errorf("successor %+v does not keep the grants of %+v", gotNew, old)
	}

	// An old key that ends sooner than the overlap keeps its own end.
	soon := t0.Add(time.Minute)
	_, short := minted(t, 3, ModeLive, func(r *Record) { r.ExpiresAt = &soon })
	path = keyFile(t, short)
	if _, _, err := editor(path, 4).Rotate(short.ID, DefaultOverlap, false); err != nil {
		t.Fatal(err)
	}
	if recs := load0600(t, path); !recs[0].ExpiresAt.Equal(soon) {
		t.Errorf("old expiresAt = %v, want its earlier %v kept", recs[0].ExpiresAt, soon)
	}

	// Nothing to rotate: an expired key, a tokens-only record, a negative overlap.
	past := t0.Add(-time.Minute)
	_, expired := minted(t, 5, ModeLive, func(r *Record) { r.ExpiresAt = &past })
	_, tokensOnly := minted(t, 6, ModeLive, func(r *Record) { r.SHA256, r.ClientID = "", "c" })
	path = keyFile(t, expired, tokensOnly)
	ed := editor(path, 7)
	for _, id := range []string{expired.ID, tokensOnly.ID} {
		if _, _, err := ed.Rotate(id, time.Hour, false); err == nil {
			t.Errorf("Rotate(%s) succeeded", id)
		}
	}
	if _, _, err := ed.Rotate(expired.ID, -time.Hour, false); err == nil {
		t.Error("a negative overlap was taken")
	}
}

func TestEditorConcurrentAddsKeepEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, _, err := editor(path, uint64(100+i)).Add(NewKey{Brand: "aurora", Mode: ModeLive})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if recs := load0600(t, path); len(recs) != n {
		t.Errorf("%d records after %d concurrent adds", len(recs), n)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".keys.json.*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestEditorListShowsNoDigest(t *testing.T) {
	exp := t0.Add(-time.Hour)
	_, rec1 := minted(t, 1, ModeLive, func(r *Record) { r.ExpiresAt = &exp })
	_, rec2 := minted(t, 2, ModeLive, func(r *Record) { r.SHA256, r.ClientID = "", "c" })
	path := keyFile(t, rec1, rec2)
	list, err := editor(path, 3).List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != rec1.ID || !list[0].Expired || !list[0].APIKey || list[1].APIKey || list[1].ClientID != "c" {
		t.Errorf("list = %+v", list)
	}
}

func TestEditorRewritesTheTargetOfASymlink(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	target := keyFile(t, rec)
	link := filepath.Join(t.TempDir(), "keys.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := editor(link, 2).SetStatus(rec.ID, StatusSuspended); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	if recs := load0600(t, target); recs[0].Status != StatusSuspended {
		t.Error("the target was not edited")
	}
}

func TestEditorWritesAreSeenByAWatchingStore(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	path := keyFile(t, rec)
	s, _, _ := watching(t, path)
	token, _, err := editor(path, 2).Add(NewKey{Brand: "aurora", Mode: ModeLive})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the added key is in force", found(s, token))
	if err := editor(path, 3).Revoke(rec.ID); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the revoked record is gone", func() bool { return s.Len() == 1 })
}

func TestParseExpiry(t *testing.T) {
	for in, want := range map[string]time.Time{
		"720h":                      t0.Add(720 * time.Hour),
		"1.5s":                      t0.Add(time.Second), // whole seconds
		"2027-01-31T00:00:00Z":      time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
		"2027-01-31T01:00:00+01:00": time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseExpiry(in, t0); err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0s", "-1h", "tomorrow", "2020-01-01T00:00:00Z", "2027-01-31"} {
		if _, err := ParseExpiry(in, t0); err == nil {
			t.Errorf("ParseExpiry(%q) succeeded", in)
		}
	}
}

func TestCheckLoadsAsTheEdgeDoes(t *testing.T) {
	exp := t0.Add(-time.Hour)
	_, rec1 := minted(t, 1, ModeLive, func(r *Record) { r.Status = StatusSuspended })
	_, rec2 := minted(t, 2, ModeLive, func(r *Record) { r.ExpiresAt = &exp })
	sum, err := Check(keyFile(t, rec1, rec2), t0)
	if err != nil || sum != (Summary{Keys: 2, Suspended: 1, Expired: 1}) {
		t.Errorf("Check = %+v, %v", sum, err)
	}
	bad := keyFile(t, rec1)
	writeFile(t, bad, []byte(`{"keys":[{"id":"key_a"}],"extra":1}`))
	if _, err := Check(bad, t0); err == nil || !strings.Contains(err.Error(), `unknown field "extra"`) {
		t.Errorf("Check of a bad file: %v", err)
	}
	if _, err := Check(filepath.Join(t.TempDir(), "none.json"), t0); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Check of a missing file: %v", err)
	}
}

// docs/contract.md section 22: a key that already has a successor is not
// rotated again without force (it would leave two live successors); the
// error names the successor. The successor itself rotates, and once it is
// revoked the old key rotates again.
func TestEditorRotateTwiceNeedsForce(t *testing.T) {
	_, old := minted(t, 1, ModeLive, func(r *Record) { r.Partner, r.Scopes = "Acme", []string{"properties:read"} })
	_, other := minted(t, 2, ModeLive, func(r *Record) { r.Partner = "Other" })
	path := keyFile(t, old, other)
	_, first, err := editor(path, 3).Rotate(old.ID, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := editor(path, 4).Rotate(other.ID, time.Hour, false); err != nil {
		t.Fatalf("another partner's key: %v", err)
	}
	_, _, err = editor(path, 5).Rotate(old.ID, time.Hour, false)
	if err == nil || !strings.Contains(err.Error(), "already has a successor, "+first.ID) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second rotation: %v; want a refusal naming %s and --force", err, first.ID)
	}
	if n := len(load0600(t, path)); n != 4 {
		t.Fatalf("%d records after the refusal, want 4", n)
	}
	_, second, err := editor(path, 6).Rotate(old.ID, time.Hour, true)
	if err != nil || second.ID == first.ID {
		t.Fatalf("forced rotation: %v", err)
	}
	if _, _, err := editor(path, 7).Rotate(first.ID, time.Hour, false); err != nil {
		t.Fatalf("rotating the successor: %v", err)
	}

	path = keyFile(t, old)
	_, first, err = editor(path, 8).Rotate(old.ID, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := editor(path, 9).Revoke(first.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := editor(path, 10).Rotate(old.ID, time.Hour, false); err != nil {
		t.Fatalf("rotation after the successor was revoked: %v", err)
	}
}

// docs/contract.md section 22: a lock file with another name (a hard link)
// is refused like a symbolic link, and the file it names is left alone.
func TestEditorRefusesHardLinkedLock(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	path := keyFile(t, rec)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(elsewhere, []byte("not a lock"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(elsewhere, path+".lock"); err != nil {
		t.Fatal(err)
	}
	err := editor(path, 2).Revoke(rec.ID)
	if err == nil || !strings.Contains(err.Error(), "has 2 links") || !strings.Contains(err.Error(), path+".lock") {
		t.Fatalf("Revoke: %v; want a refusal naming the lock file and its links", err)
	}
	if n := len(load0600(t, path)); n != 1 {
		t.Errorf("%d records: the key file was edited", n)
	}
	if b, _ := os.ReadFile(elsewhere); string(b) != "not a lock" {
		t.Errorf("the linked file changed: %q", b)
	}
}
