package edge

import (
	"net/url"
	"testing"
)

// queryUnescape and validEscapes are the fast paths of parseQuery; each
// must agree with url.QueryUnescape, which they stand in for.
func FuzzQueryUnescape(f *testing.F) {
	for _, s := range []string{"", "page", "a+b", "%41", "%4", "%", "%zz", "a%2", "x%41%42", "%%41", "caf%C3%A9", "%2B+%20"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := url.QueryUnescape(s)
		got, ok := queryUnescape(s)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("queryUnescape(%q) = %q, %v; url.QueryUnescape = %q, %v", s, got, ok, want, err)
		}
		if validEscapes(s) != (err == nil) {
			t.Fatalf("validEscapes(%q) = %v; url.QueryUnescape error %v", s, validEscapes(s), err)
		}
	})
}
