package settingval

import (
	"strings"
	"testing"
)

// Each reader takes what the settings document and refuses the rest with
// what it wants.
func TestReaders(t *testing.T) {
	for _, c := range []struct {
		name, in string
		read     func(string) (any, error)
		want     any // nil: refused
	}{
		{"size plain", "268435456", anyOf(Size), int64(268435456)},
		{"size unit", "256MiB", anyOf(Size), int64(256 << 20)},
		{"size spaced", " 2 GB ", anyOf(Size), int64(2e9)},
		{"size zero", "0", anyOf(Size), nil},
		{"size overflow", "9999999999TiB", anyOf(Size), nil},
		{"size unit unknown", "3 furlongs", anyOf(Size), nil},
		{"duration", "30s", anyOf(Duration), "30s"},
		{"duration negative", "-1s", anyOf(Duration), nil},
		{"url trailing slash", "https://pms.example/", anyOf(URL), "https://pms.example"},
		{"url relative", "/pms", anyOf(URL), nil},
		{"base url with query", "https://pms.example/?a=1", anyOf(BaseURL), nil},
		{"exact url kept", "https://id.example/", anyOf(ExactURL), "https://id.example/"},
		{"public url with credentials", "https://u:p@api.example", anyOf(PublicURL), nil},
		{"public url", "https://api.example/partners/", anyOf(PublicURL), "https://api.example/partners"},
		{"public url ending v1", "https://api.example/v1", anyOf(PublicURL), nil},
		{"public url ending v1/", "https://api.example/partners/v1/", anyOf(PublicURL), nil},
		{"public url v1 inside", "https://api.example/v1x", anyOf(PublicURL), "https://api.example/v1x"},
		{"docs url ending v1", "https://docs.example/v1", anyOf(DocsURL), nil},
		{"docs url", "https://docs.example/v1/docs", anyOf(DocsURL), "https://docs.example/v1/docs"},
		{"docs path off", "off", anyOf(DocsPath), ""},
		{"docs path", "/developer/", anyOf(DocsPath), "/developer"},
		{"docs path under v1", "/v1/docs", anyOf(DocsPath), nil},
		{"docs path pattern", "/docs/{x}", anyOf(DocsPath), nil},
		{"one of", "text", anyOf(OneOf("json", "text")), "text"},
		{"one of refused", "xml", anyOf(OneOf("json", "text")), nil},
	} {
		got, err := c.read(c.in)
		switch {
		case c.want == nil && err == nil:
			t.Errorf("%s: %q accepted as %v", c.name, c.in, got)
		case c.want != nil && err != nil:
			t.Errorf("%s: %q refused: %v", c.name, c.in, err)
		case c.want != nil && got != c.want:
			t.Errorf("%s: %q read as %v, want %v", c.name, c.in, got, c.want)
		case err != nil && !strings.HasPrefix(err.Error(), "want "):
			t.Errorf("%s: error %q does not say what is wanted", c.name, err)
		}
	}
}

func anyOf[T any](read func(string) (T, error)) func(string) (any, error) {
	return func(s string) (any, error) {
		v, err := read(s)
		if d, ok := any(v).(interface{ String() string }); ok {
			return d.String(), err
		}
		return v, err
	}
}

// A URL ending in /v1 is refused with the URL to set instead, credentials
// redacted.
func TestNoV1NamesTheCorrection(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example/v1":           "https://api.example",
		"https://api.example/partners/v1":  "https://api.example/partners",
		"https://u:secret@docs.example/v1": "https://u:xxxxx@docs.example",
	} {
		read := PublicURL
		if strings.Contains(in, "@") {
			read = DocsURL
		}
		_, err := read(in)
		if err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
			t.Errorf("%s: error %v, want one ending %q", in, err, want)
		}
	}
}
