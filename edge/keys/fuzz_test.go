package keys

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse: no key file panics the parser; an accepted file holds only
// records that satisfy the key file's rules; a refused one says why
// without quoting any value (a digest or a partner name never lands in a
// log line through an error).
func FuzzParse(f *testing.F) {
	good, _ := json.Marshal(map[string]any{"keys": []any{goodRecord()}})
	f.Add(good)
	f.Add([]byte(`{"keys":[]}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`{"keys":[{}]}`))
	f.Add([]byte(`{"keys":[{"id":"key_a","sha256":"` + strings.Repeat("A", 64) + `","extra":1}]}`))
	f.Add([]byte(`{"keys":[` + strings.Repeat(`{"id":1},`, 30) + `{}]}`))
	f.Add([]byte(`{"keys":[{"id":"key_a","expiresAt":"2020-13-01T00:00:00Z","scopes":[]}]}`))
	f.Add([]byte(`[` + strings.Repeat(`[`, 1000)))
	f.Add([]byte(`{"keys":[{"properties":["*","*"],"mode":"sandbox"}]}garbage`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := Parse(data)
		if err != nil {
			if recs != nil {
				t.Fatalf("records with an error")
			}
			if len(err.Error()) > 64<<10 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		for _, r := range recs {
			if !idPattern.MatchString(r.ID) || len(r.SHA256) != 64 || !isHex(r.SHA256) || strings.ToLower(r.SHA256) != r.SHA256 {
				t.Fatalf("accepted record %+v", r)
			}
			if r.Mode != ModeLive && r.Mode != ModeTest || r.Status != StatusActive && r.Status != StatusSuspended {
				t.Fatalf("accepted record %+v", r)
			}
			if len(r.Properties) == 0 {
				t.Fatalf("accepted record without properties %+v", r)
			}
		}
	})
}

// FuzzValidFormat: ValidFormat agrees with the rule of docs/contract.md
// section 3, and a key of a valid format has a digest that fits the
// bounded buffer.
func FuzzValidFormat(f *testing.F) {
	for _, s := range []string{"", "svc_live_", "svc_live_" + strings.Repeat("a", 24), "svc_test_" + strings.Repeat("Z9", 12),
		"svc_live_" + strings.Repeat("a", 23), "svc_prod_" + strings.Repeat("a", 30), "svc_live_" + strings.Repeat("a", 300),
		"svc_live_aaaaaaaaaaaaaaaaaaaaaaa-", "SVC_LIVE_" + strings.Repeat("a", 24), "svc_live_ééééééééééééééééééééééééé"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		ok := ValidFormat(token)
		rest, live := strings.CutPrefix(token, PrefixLive)
		if !live {
			rest, _ = strings.CutPrefix(token, PrefixTest)
		}
		want := (strings.HasPrefix(token, PrefixLive) || strings.HasPrefix(token, PrefixTest)) &&
			len(rest) >= minSecretLen && len(token) <= MaxTokenLen && strings.Trim(rest, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
		if ok != want {
			t.Fatalf("ValidFormat(%q) = %v, want %v", token, ok, want)
		}
		if ok && digestBounded(token) != Digest(token) {
			t.Fatalf("bounded digest differs for %q", token)
		}
	})
}
