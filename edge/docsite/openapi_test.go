package docsite

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/oasdiff/yaml"
)

// decode reads a YAML or JSON document into plain values.
func decode(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The site serves docs/openapi.yaml (docs/contract.md section 21): the
// embedded copy is the file itself, and the served YAML and JSON are that
// document with only its server URL and contact changed.
func TestServedDocumentIsTheContract(t *testing.T) {
	src, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, openapiSource) {
		t.Fatal("edge/docsite/openapi.yaml is not docs/openapi.yaml: run go generate ./edge/docsite")
	}
	want := decode(t, src)
	if _, ok := want["info"].(map[string]any)["contact"]; ok {
		t.Error("docs/openapi.yaml names a contact: it comes from EDGE_DOCS_CONTACT")
	}
	for _, tc := range []struct {
		name, public, contact string
		wantServer            string
		wantContact           map[string]any
	}{
		{"deployment", "https://partners.brand.test", "https://support.brand.test/partners", "https://partners.brand.test/v1", map[string]any{"url": "https://support.brand.test/partners"}},
		{"e-mail contact", "http://127.0.0.1:8080", "mailto:partners@brand.test", "http://127.0.0.1:8080/v1", map[string]any{"email": "partners@brand.test"}},
		{"no contact", "https://partners.brand.test", "", "https://partners.brand.test/v1", nil},
		{"no public URL", "", "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := build(t, Options{DocsURL: "https://partners.brand.test/docs", PublicURL: tc.public, Contact: tc.contact, BasePath: "/docs"})
			y, ok := s.files["openapi.yaml"]
			if !ok {
				t.Fatal("no openapi.yaml")
			}
			j, ok := s.files["openapi.json"]
			if !ok {
				t.Fatal("no openapi.json")
			}
			got, gotJSON := decode(t, y.body), decode(t, j.body)
			if !reflect.DeepEqual(got, gotJSON) {
				t.Error("openapi.json is not openapi.yaml")
			}
			servers := got["servers"].([]any)
			if tc.wantServer == "" {
				if !reflect.DeepEqual(got, want) {
					t.Error("without a public URL the served document is not docs/openapi.yaml")
				}
				return
			}
			if len(servers) != 1 || servers[0].(map[string]any)["url"] != tc.wantServer {
				t.Errorf("servers %v, want one at %s", servers, tc.wantServer)
			}
			info := got["info"].(map[string]any)
			if c, _ := info["contact"].(map[string]any); !reflect.DeepEqual(c, tc.wantContact) {
				t.Errorf("contact %v, want %v", info["contact"], tc.wantContact)
			}
			delete(info, "contact")
			got["servers"] = want["servers"]
			if !reflect.DeepEqual(got, want) {
				t.Error("the served document differs from docs/openapi.yaml beyond servers and contact")
			}
		})
	}
}

// No page of the site talks about the repository or shows a placeholder:
// examples are on the deployment's URL, the documentationUrl sample is
// its docs URL, and a contact appears only when one is given.
func TestSiteShowsTheDeployment(t *testing.T) {
	const public, docs, contact = "https://partners.brand.test", "https://partners.brand.test/docs", "https://support.brand.test/partners"
	for _, withContact := range []bool{false, true} {
		opts := Options{DocsURL: docs, PublicURL: public, BasePath: "/docs"}
		if withContact {
			opts.Contact = contact
		}
		s := build(t, opts)
		for _, p := range s.Files() {
			if !strings.HasSuffix(p, ".html") {
				continue
			}
			page := s.files[p].body
			for _, bad := range []string{"example.com", "edge-public-url.invalid", "edge-docs-url.invalid", "docs/", "repository", "test suite"} {
				if i := bytes.Index(page, []byte(bad)); i >= 0 && !(bad == "docs/" && bytes.HasPrefix(page[max(0, i-1):], []byte("/docs/"))) {
					t.Errorf("%s shows %q: …%s…", p, bad, page[max(0, i-80):min(len(page), i+80)])
				}
			}
			if got := bytes.Contains(page, []byte(contact)); got != withContact {
				t.Errorf("%s: contact shown %v, want %v", p, got, withContact)
			}
		}
		ref := s.files["reference.html"].body
		for _, want := range []string{public + "/v1</span>/properties", `<a href="` + docs + `">` + docs + `</a>`,
			`href="/docs/openapi.yaml"`, `href="/docs/openapi.json"`} {
			if !bytes.Contains(ref, []byte(want)) {
				t.Errorf("reference page lacks %s", want)
			}
		}
		home := s.files["index.html"].body
		if !bytes.Contains(home, []byte(public+"/v1/properties")) {
			t.Error("the home page's first call is not on the public URL")
		}
	}
}

func TestParseContact(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "https://support.brand.test/partners": "https://support.brand.test/partners",
		"partners@brand.test": "mailto:partners@brand.test", "mailto:partners@brand.test": "mailto:partners@brand.test",
	} {
		if got, err := ParseContact(in); err != nil || got != want {
			t.Errorf("ParseContact(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"support", "ftp://x.test", "javascript:alert(1)", "Support <a@b.test>", "https://"} {
		if got, err := ParseContact(bad); err == nil {
			t.Errorf("ParseContact(%q) = %q, want an error", bad, got)
		}
	}
}
