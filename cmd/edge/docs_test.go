package main

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

var docsLine = regexp.MustCompile(`docs:\s+(http://\S+)/\n`)

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var h1 = regexp.MustCompile(`(?s)<h1[^>]*>(.*?)</h1>`)

// The demo serves its documentation at /docs and points every problem type
// and documentationUrl there: a real answer's type opens, unauthenticated,
// with a heading naming the code, public caching and a strict CSP
// (docs/contract.md section 13).
func TestDemoServesItsDocs(t *testing.T) {
	s := start(t, map[string]string{"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "off"})
	base := s.waitFor(t, urlLine)[1]
	waitHealthy(t, base)
	key := s.waitFor(t, keyLines)[1]
	docsURL := s.waitFor(t, docsLine)[1]
	origin := strings.TrimSuffix(base, "/v1/")
	if docsURL != origin+"/docs" {
		t.Fatalf("docs URL %q, want %s/docs", docsURL, origin)
	}
	res, body := get(t, base+"properties/", "Authorization", "Bearer "+key, "User-Agent", "docs-test/1.0")
	var pb struct{ Type, Code string }
	if err := json.Unmarshal([]byte(body), &pb); err != nil || res.StatusCode != 400 || pb.Code != "TRAILING_SLASH" {
		t.Fatalf("/v1/properties/: %d %s", res.StatusCode, body)
	}
	if want := docsURL + "/errors/trailing-slash"; pb.Type != want {
		t.Fatalf("type %q, want %q", pb.Type, want)
	}
	_, body = get(t, base, "Authorization", "Bearer "+key, "User-Agent", "docs-test/1.0")
	if !strings.Contains(body, `"documentationUrl":"`+docsURL+`"`) {
		t.Errorf("API info %s, want documentationUrl %s", body, docsURL)
	}
	for _, u := range []string{pb.Type, docsURL, docsURL + "/reference"} {
		res, page := get(t, u) // no key: the pages are public
		m := h1.FindStringSubmatch(page)
		switch {
		case res.StatusCode != 200 || m == nil:
			t.Errorf("%s: %d, no heading", u, res.StatusCode)
		case u == pb.Type && !strings.Contains(m[1], "TRAILING_SLASH"):
			t.Errorf("%s: heading %q does not name the code", u, m[1])
		}
		if cc := res.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "public, max-age=") {
			t.Errorf("%s: Cache-Control %q, want public caching", u, cc)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: Content-Security-Policy %q", u, csp)
		}
	}
	// The API keeps its rules: /v1 answers are still no-store problems.
	if res, _ := get(t, base+"properties"); res.StatusCode != 401 || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("/v1/properties without a key: %d, Cache-Control %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
}

// The demo serves its own documentation site at /docs, always: an
// EDGE_DOCS_PATH (even empty, which turns the site off in a deployment) or
// EDGE_DOCS_URL in the demo is a start-up error naming it and PMS_BASE_URL
// (docs/contract.md section 22; TestDemoRefusesDeploymentShapedEnvironment
// runs the binary).
func TestDemoDocsSettings(t *testing.T) {
	for _, env := range []map[string]string{{"EDGE_DOCS_PATH": ""}, {"EDGE_DOCS_PATH": "/developer"}, {"EDGE_DOCS_URL": testDocsURL}} {
		_, err := parseSettings(nil, mapEnv(env), io.Discard)
		for name := range env {
			if err == nil || !strings.Contains(err.Error(), name+" is set but PMS_BASE_URL is not") {
				t.Errorf("demo with %v: %v, want an error naming %s and PMS_BASE_URL", env, err, name)
			}
		}
	}
}

func TestDocsPathSetting(t *testing.T) {
	for _, tc := range []struct {
		value, want string
		bad         bool
	}{
		{"/docs", "/docs", false},
		{"/docs/", "/docs", false},
		{"/developer/partner-api", "/developer/partner-api", false},
		{"docs", "", true},
		{"/v1/docs", "", true},
		{"/v1", "", true},
		{"/.well-known/docs", "", true},
		{"/a/../b", "", true},
		{"/{x}", "", true},
	} {
		cfg, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_DOCS_PATH": tc.value})), io.Discard)
		if (err != nil) != tc.bad || (!tc.bad && cfg.DocsPath != tc.want) {
			t.Errorf("EDGE_DOCS_PATH=%q: %q, %v", tc.value, cfg.DocsPath, err)
		}
		if err != nil && !strings.Contains(err.Error(), "EDGE_DOCS_PATH") {
			t.Errorf("error %q does not name the setting", err)
		}
	}
}

// edge docs build DIR writes a static site: served by a plain file server,
// the type URI of every registry code (under the docs URL it was built for)
// opens a page naming the code, and the home page opens.
func TestDocsBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "site")
	var out, errOut strings.Builder
	err := run(t.Context(), []string{"edge", "docs", "build", "--docs-url", "https://docs.example.test/partner", dir},
		mapEnv(nil), &out, &errOut)
	if err != nil {
		t.Fatalf("edge docs build: %v\n%s", err, errOut.String())
	}
	srv := httptest.NewServer(http.StripPrefix("/partner", http.FileServer(http.Dir(dir))))
	defer srv.Close()
	for _, e := range problem.All() {
		u := strings.Replace(problem.TypeURI("https://docs.example.test/partner", e.Code), "https://docs.example.test", srv.URL, 1)
		res, page := get(t, u) // the file server redirects the directory to its index
		m := h1.FindStringSubmatch(page)
		if res.StatusCode != 200 || m == nil || !strings.Contains(m[1], string(e.Code)) {
			t.Errorf("%s: %d, heading %v", u, res.StatusCode, m)
		}
		if !strings.Contains(html.UnescapeString(page), `"type":"https://docs.example.test/partner/errors/`) {
			t.Errorf("%s: the example body does not use the docs URL built for", u)
		}
	}
	for _, p := range []string{"/partner/", "/partner/reference.html", "/partner/authentication.html"} {
		if res, _ := get(t, srv.URL+p); res.StatusCode != 200 {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}
	for _, args := range [][]string{{"edge", "docs"}, {"edge", "docs", "build"}, {"edge", "docs", "build", "--docs-url", "ftp://x", dir}} {
		if err := run(t.Context(), args, mapEnv(nil), io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "errors", "route-not-found", "index.html")); err != nil {
		t.Error(err)
	}
}

// edge docs build writes the OpenAPI document too (docs/contract.md
// section 21), YAML and JSON, its server on EDGE_PUBLIC_URL and its
// contact EDGE_DOCS_CONTACT's; the reference page links to both, and a
// contact that is neither a URL nor an address is refused.
func TestDocsBuildWritesTheContract(t *testing.T) {
	dir := t.TempDir()
	env := mapEnv(map[string]string{"EDGE_PUBLIC_URL": "https://partners.brand.test", "EDGE_DOCS_CONTACT": "https://support.brand.test/partners"})
	if err := run(t.Context(), []string{"edge", "docs", "build", dir}, env, io.Discard, io.Discard); err != nil {
		t.Fatalf("edge docs build: %v", err)
	}
	for _, name := range []string{"openapi.yaml", "openapi.json"} {
		doc, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"https://partners.brand.test/v1", "https://support.brand.test/partners"} {
			if !strings.Contains(string(doc), want) {
				t.Errorf("%s lacks %s", name, want)
			}
		}
	}
	ref, err := os.ReadFile(filepath.Join(dir, "reference.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`href="openapi.yaml"`, `href="openapi.json"`} {
		if !strings.Contains(string(ref), want) {
			t.Errorf("reference.html lacks %s", want)
		}
	}
	bad := mapEnv(map[string]string{"EDGE_DOCS_CONTACT": "call us"})
	if err := run(t.Context(), []string{"edge", "docs", "build", dir}, bad, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "EDGE_DOCS_CONTACT") {
		t.Errorf("EDGE_DOCS_CONTACT=\"call us\": %v, want an error naming it", err)
	}
}
