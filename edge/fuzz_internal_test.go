package edge

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// FuzzParseQuery: any query string is accepted with values in range, or
// refused with a registered 400/422 code whose entries name real fields, at
// most problem.MaxErrors of them listed.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "page=1&perPage=50", "page=2147483647", "page=0", "perPage=101", "page=%zz",
		"a;b", "per_page=5", "Page=1&page=1", "page=1&page=2", "&&&", "=", "page=+1", "x=" + strings.Repeat("%41", 100),
		strings.Repeat("u=1&v=2&", 50), "page=99999999999999999999", "%00=%00", "page=1e3&perPage=0x10",
		"after=evt_ok&limit=5", "after=x&limit=0", "after=evt_ok&after=evt_ok", "limit=", "after=", "page=2&asOf=evt_ok", "asOf=evt_ok&asOf=evt_ok", "asOf=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		valid := func(s string) bool { return s == "evt_ok" }
		for _, params := range [][]intParam{listParams(valid), nil, eventsParams(valid)} {
			vals, err := parseQuery(raw, params)
			if err == nil {
				for i, p := range params {
					if p.valid != nil {
						if vals.given[i] && !valid(vals.text[i]) {
							t.Fatalf("%q: %s = %q, which valid refuses", raw, p.name, vals.text[i])
						}
						continue
					}
					if vals.n[i] < p.min || vals.n[i] > p.max {
						t.Fatalf("%q: %s = %d out of [%d, %d]", raw, p.name, vals.n[i], p.min, p.max)
					}
				}
				continue
			}
			var pe *problem.Error
			if !errors.As(err, &pe) || !problem.Known(pe.Code) {
				t.Fatalf("%q: error %v is not a registered problem", raw, err)
			}
			if st := pe.Status(); st != 400 && st != 422 {
				t.Fatalf("%q: status %d", raw, st)
			}
			if len(pe.Errors) > problem.MaxErrors || pe.Total > 0 && pe.Total < len(pe.Errors) {
				t.Fatalf("%q: %d entries, total %d", raw, len(pe.Errors), pe.Total)
			}
			for _, fe := range pe.Errors {
				if fe.Field == "" && pe.Code != problem.UnknownQueryParameter || fe.Code == "" || fe.Detail == "" {
					t.Fatalf("%q: entry %+v", raw, fe)
				}
			}
		}
	})
}

// FuzzHeaderValidation: the checks of User-Agent, Svc-Correlation-Id and
// Authorization never panic, and accept only what the contract allows.
func FuzzHeaderValidation(f *testing.F) {
	for _, s := range []string{"", "curl/8.0", "ab", strings.Repeat("x", 256), "a\x00b", "Bearer svc_live_abc", "bearer  tok",
		"Bearer", "Basic dXNlcg==", "abc-123_=+/.", "é", "Bearer a b", "\t"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, vs := range [][]string{nil, {a}, {a, b}} {
			fe, missing := checkUserAgent(vs)
			if fe == nil && (len(vs) != 1 || len(vs[0]) < 3 || len(vs[0]) > 255 || !printableASCII(vs[0])) {
				t.Fatalf("User-Agent %q accepted", vs)
			}
			if missing && fe == nil {
				t.Fatalf("missing without an error")
			}
			if fe != nil && (fe.Field != "User-Agent" || fe.Code == "") {
				t.Fatalf("entry %+v", fe)
			}
			h := map[string][]string{}
			if vs != nil {
				h["Svc-Correlation-Id"] = vs
			}
			id, ok := correlationID(h)
			if id != "" && (!ok || len(vs) != 1 || id != vs[0] || len(id) > 128 || strings.ContainsAny(id, " \t\r\n\"\\<>&")) {
				t.Fatalf("correlation id %q accepted from %q", id, vs)
			}
			if !ok {
				ce := correlationError(vs)
				if ce.Field != "Svc-Correlation-Id" || ce.Code == "" {
					t.Fatalf("entry %+v", ce)
				}
			}
			if token, ok := bearerToken(vs); ok && (token == "" || strings.ContainsAny(token, " \t") || len(vs) != 1) {
				t.Fatalf("token %q taken from %q", token, vs)
			}
			_ = sentBearerToken(vs)
		}
	})
}

// FuzzAccept: acceptsJSON never panics; an Accept that names no JSON
// range is refused, and a bare application/json is accepted whatever else
// the header holds.
func FuzzAccept(f *testing.F) {
	for _, s := range []string{"", "*/*", "application/json", "text/html", "application/json;q=0", "application/*;q=0.001",
		"text/html, application/json;q=0.5", "APPLICATION/JSON", "application/json;q=abc", "*/*;q=1.5", ";;;,,,", "application/json ; q = 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ok := acceptsJSON([]string{v})
		lower := strings.ToLower(v)
		if ok && !strings.Contains(lower, "*/*") && !strings.Contains(lower, "application/") {
			t.Fatalf("Accept %q accepted", v)
		}
		if !acceptsJSON([]string{v, "application/json"}) {
			t.Fatalf("Accept %q plus application/json refused", v)
		}
	})
}

// FuzzCanonicalPath: decoding unreserved characters is idempotent, never
// creates a separator or a new escape, and keeps the decoded path equal.
func FuzzCanonicalPath(f *testing.F) {
	for _, s := range []string{"/v1/propert%69es", "/v1/properties%2Fx", "%", "%4", "%41%", "/%7e%7E%2e%2E", "%%41", "/a%20b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		out, changed := decodeUnreserved(p)
		if changed == (out == p) {
			t.Fatalf("%q -> %q, changed=%v", p, out, changed)
		}
		if strings.Count(out, "/") != strings.Count(p, "/") {
			t.Fatalf("%q -> %q: separators changed", p, out)
		}
		if again, _ := decodeUnreserved(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", p, out, again)
		}
		a, errA := url.PathUnescape(p)
		b, errB := url.PathUnescape(out)
		if errA == nil && (errB != nil || a != b) {
			t.Fatalf("%q -> %q changes the decoded path: %q vs %q (%v)", p, out, a, b, errB)
		}
	})
}
