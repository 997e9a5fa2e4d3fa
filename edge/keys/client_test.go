package keys

import (
	"strings"
	"testing"
)

// clientId (docs/contract.md section 12): optional; a record may have it
// instead of sha256 or beside it, never neither; unique; strict parsing
// stays.
func TestParseClientID(t *testing.T) {
	both := goodRecord()
	both["clientId"] = "partner-a"
	only := goodRecord()
	delete(only, "sha256")
	only["id"], only["clientId"] = "key_tokensOnly", "partner-b"
	recs, err := Parse(fileOf(t, both, only))
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].ClientID != "partner-a" || recs[0].SHA256 != goodDigest || recs[1].ClientID != "partner-b" || recs[1].SHA256 != "" {
		t.Errorf("records %+v", recs)
	}

	for _, c := range []struct {
		name string
		recs func() []map[string]any
		want string
	}{
		{"neither sha256 nor clientId", func() []map[string]any {
			r := goodRecord()
			delete(r, "sha256")
			return []map[string]any{r}
		}, "sha256"},
		{"empty clientId", func() []map[string]any {
			r := goodRecord()
			r["clientId"] = ""
			return []map[string]any{r}
		}, "clientId"},
		{"clientId with a space", func() []map[string]any {
			r := goodRecord()
			r["clientId"] = "partner a"
			return []map[string]any{r}
		}, "clientId"},
		{"clientId not a string", func() []map[string]any {
			r := goodRecord()
			r["clientId"] = 7
			return []map[string]any{r}
		}, "clientId"},
		{"clientId too long", func() []map[string]any {
			r := goodRecord()
			r["clientId"] = strings.Repeat("c", 256)
			return []map[string]any{r}
		}, "clientId"},
		{"same clientId twice", func() []map[string]any {
			a, b := goodRecord(), goodRecord()
			delete(b, "sha256")
			a["clientId"], b["clientId"], b["id"] = "partner-a", "partner-a", "key_second"
			return []map[string]any{a, b}
		}, "same client"},
		{"clientID misspelt", func() []map[string]any {
			r := goodRecord()
			r["clientID"] = "partner-a"
			return []map[string]any{r}
		}, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(fileOf(t, c.recs()...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestLookupClient(t *testing.T) {
	token, rec := minted(t, 1, ModeLive, func(r *Record) { r.ClientID = "partner-a" })
	_, only := minted(t, 2, ModeTest, func(r *Record) { r.SHA256, r.ClientID = "", "partner-b" })
	s, err := Open(keyFile(t, rec, only), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 || !s.Usable() {
		t.Errorf("Len %d", s.Len())
	}
	a, ok := s.LookupClient("partner-a")
	byKey, ok2 := s.Lookup(token)
	if !ok || !ok2 || a != byKey {
		t.Errorf("a record with both: the client and the key must find the same principal")
	}
	if b, ok := s.LookupClient("partner-b"); !ok || b.Mode != ModeTest || b.ID != only.ID {
		t.Errorf("partner-b: %+v %v", b, ok)
	}
	for _, id := range []string{"", "partner-c", "PARTNER-A"} {
		if _, ok := s.LookupClient(id); ok {
			t.Errorf("LookupClient(%q) found a record", id)
		}
	}
	var zero Store
	if _, ok := zero.LookupClient("partner-a"); ok {
		t.Error("a zero Store found a client")
	}
}
