package docsite

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oasdiff/yaml"

	"github.com/partner-edge/partner-edge/problem"
)

func build(t *testing.T, opts Options) *Site {
	t.Helper()
	s, err := Build(opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return s
}

var exampleBody = regexp.MustCompile(`(?s)<pre><code>HTTP/1\.1 (\d+) [^\n]*\n(.*?)\n\n(\{.*?\})</code></pre>`)

// Every code of the registry has a page at the path of its type URI, with
// a heading naming the code, the registry's explanation, the guide's when
// and what-to-do, and an example body that the real problem writer wrote
// (it decodes, and its type, code, status and title are the registry's).
func TestEveryCodeHasAPage(t *testing.T) {
	const docsURL = "https://docs.example.test/partner"
	for _, opts := range []Options{{DocsURL: docsURL}, {DocsURL: docsURL, BasePath: "/docs"}} {
		s := build(t, opts)
		for _, e := range problem.All() {
			g, ok := guides[e.Code]
			if !ok || g.when == "" || g.do == "" || g.example == nil || g.example.Code != e.Code {
				t.Errorf("%s: no guide (when, what to do, an example of this code) in guidance.go", e.Code)
			}
			typ := problem.TypeURI(docsURL, e.Code)
			page, ok := s.files[strings.TrimPrefix(typ, docsURL+"/")+".html"]
			if !ok {
				t.Errorf("%s: no page for type %s", e.Code, typ)
				continue
			}
			text := html.UnescapeString(string(page.body))
			if !strings.Contains(text, "<h1><code>"+string(e.Code)+"</code>") {
				t.Errorf("%s: the page's heading does not name the code", e.Code)
			}
			for _, want := range []string{e.Explanation, g.when, g.do} {
				if !strings.Contains(text, want) {
					t.Errorf("%s: the page lacks %q", e.Code, want)
				}
			}
			m := exampleBody.FindStringSubmatch(text)
			if m == nil {
				t.Errorf("%s: no example answer on the page", e.Code)
				continue
			}
			var body struct {
				Type, Title, Code, Instance string
				Status                      int
			}
			if err := json.Unmarshal([]byte(m[3]), &body); err != nil {
				t.Errorf("%s: example body does not decode: %v", e.Code, err)
			}
			if body.Type != typ || body.Code != string(e.Code) || body.Status != e.Status || body.Title != e.Title ||
				m[1] != itoa(e.Status) || body.Instance != cmp.Or(g.path, "/v1/properties") {
				t.Errorf("%s: example %s %+v, want the registry's type, code, status, title and the guide's path", e.Code, m[1], body)
			}
			if !strings.Contains(m[2], "Content-Type: application/problem+json") {
				t.Errorf("%s: example headers lack the problem content type:\n%s", e.Code, m[2])
			}
		}
		if len(guides) != len(problem.All()) {
			t.Errorf("guidance.go has %d guides, the registry %d codes", len(guides), len(problem.All()))
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The static site: every page's links and stylesheets resolve to files of
// the written directory, and each problem page is also a directory index,
// so its extension-less type URI opens on a plain file server.
func TestWriteDirIsSelfContained(t *testing.T) {
	dir := t.TempDir()
	s := build(t, Options{})
	if err := s.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, e := range problem.All() {
		if _, err := os.Stat(filepath.Join(dir, ErrorPage(e.Code), "index.html")); err != nil {
			t.Errorf("%s: %v", e.Code, err)
		}
	}
	ref := regexp.MustCompile(`(?:href|src)="([^"#]*)(?:#[^"]*)?"`)
	pages := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		pages++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte("<script")) {
			t.Errorf("%s holds a script", p)
		}
		for _, m := range ref.FindAllSubmatch(data, -1) {
			link := html.UnescapeString(string(m[1]))
			if link == "" || strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			if strings.HasPrefix(link, "/") {
				t.Errorf("%s: absolute link %q in a static build", p, link)
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), filepath.FromSlash(link))); err != nil && !strings.HasSuffix(p, "404.html") {
				t.Errorf("%s: link %q leads nowhere", p, link)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*len(problem.All()) + 9; pages < want {
		t.Errorf("%d pages written, want at least %d", pages, want)
	}
}

// The committed reference is Redocly's render of the docs/openapi.yaml in
// this tree: its embedded document equals the file. A failure means the
// document changed without go generate ./edge/docsite.
func TestReferenceMatchesDocument(t *testing.T) {
	src, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatal(err)
	}
	// The render's placeholders, as .ci/docsite/render sets them.
	server := want["servers"].([]any)[0].(map[string]any)
	server["url"] = renderPublicURL + "/v1"
	delete(server, "variables")
	info := want["components"].(map[string]any)["schemas"].(map[string]any)["ApiInfo"].(map[string]any)
	info["properties"].(map[string]any)["documentationUrl"].(map[string]any)["examples"] = []any{renderDocsURL}
	m := regexp.MustCompile(`const __redoc_state = (\{.*\});\s*\n`).FindSubmatch(referenceHTML())
	if m == nil {
		t.Fatal("reference.html holds no __redoc_state: not a Redocly build-docs render")
	}
	var state struct {
		Spec struct {
			Data any `json:"data"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(m[1], &state); err != nil {
		t.Fatalf("__redoc_state: %v", err)
	}
	if !reflect.DeepEqual(state.Spec.Data, any(want)) {
		t.Fatal("reference.html renders another document than docs/openapi.yaml: run go generate ./edge/docsite")
	}
}

// The reference as served loads nothing from elsewhere and runs no script;
// its CSP allows exactly its own stylesheet and the style attributes it
// holds (by hash).
func TestReferenceIsSelfContained(t *testing.T) {
	s := build(t, Options{BasePath: "/docs"})
	f := s.files["reference.html"]
	page := string(f.body)
	for _, bad := range []string{"<script", "fonts.googleapis", "cdn.redoc", "modulepreload", "<style"} {
		if strings.Contains(page, bad) {
			t.Errorf("reference page holds %q", bad)
		}
	}
	if !strings.Contains(page, `href="/docs/assets/reference.css"`) || !strings.Contains(page, "List properties") {
		t.Error("reference page lacks its stylesheet or the operations")
	}
	if strings.Contains(f.csp, "unsafe-inline") || strings.Contains(f.csp, "script-src") || !strings.HasPrefix(f.csp, "default-src 'none'") {
		t.Errorf("reference CSP %q", f.csp)
	}
	attrs := regexp.MustCompile(`\sstyle="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(attrs) == 0 {
		t.Error("no style attribute found: the check below checks nothing")
	}
	for _, m := range attrs {
		sum := sha256.Sum256([]byte(html.UnescapeString(m[1])))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(f.csp, h) {
			t.Errorf("style attribute %q is not allowed by the CSP (%s)", m[1], h)
		}
	}
	css := string(s.files["assets/reference.css"].body)
	if len(css) < 10000 || strings.Contains(css, "//fonts") {
		t.Errorf("reference.css: %d bytes", len(css))
	}
}

// The handler answers every page at its address, with and without .html
// or a trailing slash, public and cacheable with a strict CSP; it revalidates
// with ETag, answers HEAD, refuses other methods and gives unknown paths a
// 404 page.
func TestHandler(t *testing.T) {
	h := build(t, Options{BasePath: "/docs"}).Handler()
	get := func(method, p string, hdr ...string) *httptest.ResponseRecorder { return record(h, method, p, hdr...) }
	for _, p := range []string{"", "/", "/errors/route-not-found", "/errors/route-not-found.html", "/errors/route-not-found/",
		"/reference", "/authentication", "/rate-limits", "/changelog", "/field-errors", "/errors", "/assets/site.css"} {
		rec := get(http.MethodGet, p)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %q: %d", p, rec.Code)
			continue
		}
		hd := rec.Header()
		if !strings.HasPrefix(hd.Get("Cache-Control"), "public, max-age=") || !strings.HasPrefix(hd.Get("Content-Security-Policy"), "default-src 'none'") ||
			hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("ETag") == "" {
			t.Errorf("GET %q: headers %v", p, hd)
		}
		if rec2 := get(http.MethodGet, p, "If-None-Match", hd.Get("ETag")); rec2.Code != http.StatusNotModified {
			t.Errorf("GET %q with its ETag: %d, want 304", p, rec2.Code)
		}
	}
	if rec := get(http.MethodHead, "/errors/route-not-found"); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes", rec.Code, rec.Body.Len())
	}
	if rec := get(http.MethodPost, "/errors"); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	for _, p := range []string{"/errors/no-such-code", "/../../etc/passwd", "/errors/route-not-found/index"} {
		if rec := get(http.MethodGet, p); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "Page not found") {
			t.Errorf("GET %q: %d, want the 404 page", p, rec.Code)
		}
	}
}

// Links in the served site are absolute under the base path and name pages
// the handler serves.
func TestServedLinksResolve(t *testing.T) {
	s := build(t, Options{BasePath: "/docs"})
	h := s.Handler()
	ref := regexp.MustCompile(`(?:href|src)="(/docs[^"#]*)`)
	seen := map[string]bool{}
	for _, p := range s.Files() {
		for _, m := range ref.FindAllStringSubmatch(string(s.files[p].body), -1) {
			seen[html.UnescapeString(m[1])] = true
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct links found", len(seen))
	}
	for link := range seen {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://x"+strings.TrimPrefix(link, "/docs"), nil))
		if rec.Code != http.StatusOK {
			t.Errorf("link %s: %d", link, rec.Code)
		}
	}
}

func TestChangelogIntroducesEveryCode(t *testing.T) {
	count := map[problem.Code]int{}
	for _, c := range changelog {
		for _, code := range c.Codes {
			count[code]++
		}
	}
	for _, e := range problem.All() {
		if count[e.Code] != 1 {
			t.Errorf("%s is introduced by %d changelog entries, want 1", e.Code, count[e.Code])
		}
	}
	for code := range count {
		if !problem.Known(code) {
			t.Errorf("changelog introduces %s, which is not in the registry", code)
		}
	}
}

func TestFieldCodesComplete(t *testing.T) {
	var got []string
	for _, f := range fieldCodes {
		got = append(got, f.Code)
		for _, c := range f.In {
			if !problem.Known(c) {
				t.Errorf("%s: sent with unknown code %s", f.Code, c)
			}
		}
	}
	want := []string{problem.FieldRequired, problem.FieldInvalidFormat, problem.FieldInvalidEnumValue,
		problem.FieldOutOfRange, problem.FieldTooLong, problem.FieldUnknownParameter}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("field codes %v, want %v", got, want)
	}
	page := build(t, Options{}).files["field-errors.html"].body
	for _, c := range want {
		if !bytes.Contains(page, []byte(`<h2 id="`+c+`">`)) {
			t.Errorf("field-errors page lacks a section for %s", c)
		}
	}
}

// ErrorPage is the problem type URI's path below the docs URL.
func TestErrorPageMatchesTypeURI(t *testing.T) {
	for _, e := range problem.All() {
		if got, want := "https://d.example/x/"+ErrorPage(e.Code), problem.TypeURI("https://d.example/x", e.Code); got != want {
			t.Errorf("%s: %s, type %s", e.Code, got, want)
		}
		if path.Dir(ErrorPage(e.Code)) != "errors" {
			t.Errorf("%s: page %s outside errors/", e.Code, ErrorPage(e.Code))
		}
	}
}

// record answers one request of method for path p on h, with the header
// pairs of hdr (name, value, ...), the way TestHandler and
// TestHandlerCompressed ask the site.
func record(h http.Handler, method, p string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://x"+p, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// docs/contract.md section 23: the site tells a partner how to keep in
// sync: list, keep the first page's cursor, follow GET /v1/events, apply
// each type, and list again on 410 (its page linked from the nav and home).
func TestKeepingInSyncPage(t *testing.T) {
	site, err := Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := site.files[fileName(pageSync)]
	if f == nil {
		t.Fatalf("no %s page", pageSync)
	}
	page := string(f.body)
	for _, want := range []string{"meta.events.next", "/v1/events?after=", "property.created", "property.updated",
		"property.removed", "hasMore", `href="errors/events-cursor-expired.html"`, "410 EVENTS_CURSOR_EXPIRED", "occurredAt",
		"asOf=evt_", `href="errors/list-snapshot-expired.html"`, "410 LIST_SNAPSHOT_EXPIRED", "<code>status</code> is <code>active</code>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if home := string(site.files["index.html"].body); !strings.Contains(home, `href="keeping-in-sync.html"`) {
		t.Error("the home page does not link to it")
	}
}

// docs/contract.md section 26: the site tells a partner how to receive
// webhooks: create an endpoint and keep its secret, what a delivery holds,
// verification with the Standard Webhooks libraries (the receivers
// TestWebhookReceiverExamples runs, shown whole), dropping a repeated
// webhook-id, the retries, disabling and enabling, and trying it with
// edge webhooks receive; linked from the nav and the home page.
func TestReceivingWebhooksPage(t *testing.T) {
	site := build(t, Options{})
	f := site.files[fileName(pageWebhooks)]
	if f == nil {
		t.Fatalf("no %s page", pageWebhooks)
	}
	page := html.UnescapeString(string(f.body))
	for _, want := range []string{"POST /v1/webhook-endpoints", "webhooks:manage", `"secret": "whsec_`, "Location: /v1/webhook-endpoints/whe_",
		"webhook-id", "webhook-timestamp", "webhook-signature", "{webhook-id}.{webhook-timestamp}.{body}", "GET /v1/events",
		"github.com/standard-webhooks/standard-webhooks/libraries", "standardwebhooks", "drop what you have seen",
		"5 seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours and 10 hours", "disabledReason", "/enable",
		"410 EVENTS_CURSOR_EXPIRED", `href="errors/events-cursor-expired.html"`, "edge webhooks receive --addr 127.0.0.1:8090 --secret whsec_",
		`href="keeping-in-sync.html"`, "DELETE /v1/webhook-endpoints/{endpointId}", "/v1/webhook-endpoints/{endpointId}/enable"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	recv, err := readReceivers()
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"Go": recv.Go, "JavaScript": recv.JavaScript, "Python": recv.Python} {
		if len(src) < 500 || !strings.Contains(page, "<pre><code>"+src+"</code></pre>") {
			t.Errorf("the page does not show the %s receiver whole", name)
		}
	}
	if strings.Contains(recv.Go, "go:build") || !strings.HasPrefix(recv.Go, "// A receiver") {
		t.Errorf("the Go receiver is shown with its build constraint:\n%.80s", recv.Go)
	}
	for _, p := range []string{"index.html", fileName(pageSync), fileName(pageWebhooks)} {
		if !strings.Contains(string(site.files[p].body), `href="receiving-webhooks.html"`) {
			t.Errorf("%s does not link to it", p)
		}
	}
}
