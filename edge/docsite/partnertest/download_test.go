package partnertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/oasdiff/yaml"
)

// decodeDoc reads a YAML or JSON OpenAPI document into plain values.
func decodeDoc(t *testing.T, what string, doc []byte) map[string]any {
	t.Helper()
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// The contract can be downloaded from the edge (docs/contract.md section
// 21): the running demo serves <docs>/openapi.yaml and <docs>/openapi.json,
// both docs/openapi.yaml with its server URL on the demo's own address and
// the contact of EDGE_DOCS_CONTACT; the reference page, in Chromium, links
// to both and shows no placeholder host; and a Go client generated from
// the served document compiles.
func TestContractDownloads(t *testing.T) {
	d := startDemo(t)
	src, err := os.ReadFile(filepath.Join(repoRoot, "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := decodeDoc(t, "docs/openapi.yaml", src)
	origin := strings.TrimSuffix(d.base, "/v1/")
	served := map[string][]byte{}
	for name, ctype := range map[string]string{"openapi.yaml": "application/yaml", "openapi.json": "application/json"} {
		status, hdr, body := call(t, "GET", d.docsURL+"/"+name, "Accept-Encoding", "identity")
		if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), ctype) {
			t.Fatalf("GET %s/%s: %d, Content-Type %q", d.docsURL, name, status, hdr.Get("Content-Type"))
		}
		served[name] = body
		got := decodeDoc(t, name, body)
		servers, _ := got["servers"].([]any)
		if len(servers) != 1 || servers[0].(map[string]any)["url"] != origin+"/v1" {
			t.Errorf("%s: servers %v, want one at %s/v1", name, got["servers"], origin)
		}
		info := got["info"].(map[string]any)
		if c, _ := info["contact"].(map[string]any); c["email"] != strings.TrimPrefix(docsContact, "mailto:") {
			t.Errorf("%s: contact %v, want EDGE_DOCS_CONTACT's %s", name, info["contact"], docsContact)
		}
		delete(info, "contact")
		got["servers"] = want["servers"]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s differs from docs/openapi.yaml beyond servers and contact", name)
		}
	}

	ctx, errs := browser(t)
	var links []string
	var text string
	if status, _, err := open(ctx, d.docsURL+"/reference"); err != nil || status != 200 {
		t.Fatalf("reference page: %d, %v", status, err)
	}
	if err := chromedp.Run(ctx,
		chromedp.Evaluate(`Array.from(document.querySelectorAll('a[download]')).map(a => a.href)`, &links),
		chromedp.Evaluate(`document.body.textContent`, &text)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"openapi.yaml", "openapi.json"} {
		link := d.docsURL + "/" + name
		found := false
		for _, l := range links {
			found = found || l == link
		}
		if !found {
			t.Errorf("the reference page has no download link to %s (links: %v)", link, links)
		}
	}
	for _, bad := range []string{"example.com", "docs/partner-api.md", "test suite", "developer.example"} {
		if strings.Contains(text, bad) {
			t.Errorf("the reference page shows %q", bad)
		}
	}
	if !strings.Contains(text, origin+"/v1") || !strings.Contains(text, strings.TrimPrefix(docsContact, "mailto:")) {
		t.Error("the reference page shows neither the demo's own URL nor its contact")
	}
	if l := errs.take(); len(l) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(l, "\n"))
	}

	// A partner's generator on what was downloaded: the Go client builds.
	dir := t.TempDir()
	goClient(t, dir, filepath.Join(dir, "openapi.yaml"), served["openapi.yaml"])
	if u, err := url.Parse(origin); err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		t.Errorf("demo origin %s is not on loopback", origin)
	}
}

// goClient generates the Go client from doc into dir and builds it,
// failing t when either fails.
func goClient(t *testing.T, dir, docPath string, doc []byte) {
	t.Helper()
	if _, msg := generateGoClient(dir, docPath, doc); msg != "" {
		if strings.HasPrefix(msg, "oapi-codegen: ") {
			need(t, "go tool oapi-codegen (module proxy)", errors.New(msg))
		}
		t.Fatal(msg)
	}
}

// generateGoClient writes doc to docPath, generates the Go client from it
// with the module's pinned oapi-codegen into dir/client, and builds it as
// a module of its own (testdata/goclient/go.mod pins its dependency).
// It returns the client's folder, or what failed.
func generateGoClient(dir, docPath string, doc []byte) (pkg, failed string) {
	if err := os.WriteFile(docPath, doc, 0o600); err != nil {
		return "", err.Error()
	}
	cfg, err := os.ReadFile("testdata/goclient/oapi-codegen.yaml")
	if err != nil {
		return "", err.Error()
	}
	pkg = filepath.Join(dir, "client")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return "", err.Error()
	}
	cfgPath := filepath.Join(dir, "cfg.yaml")
	cfg = []byte(strings.Replace(string(cfg), "output: client.gen.go", "output: "+filepath.Join(pkg, "client.gen.go"), 1))
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return "", err.Error()
	}
	gen := exec.Command("go", "tool", "oapi-codegen", "-config", cfgPath, docPath)
	if out, err := gen.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("oapi-codegen: %v\n%s", err, out)
	}
	// The client's module pins its one dependency, as a partner's would
	// (testdata/goclient/go.mod); the edge's own module needs none of it.
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join("testdata", "goclient", name))
		if err != nil {
			return "", err.Error()
		}
		if err := os.WriteFile(filepath.Join(pkg, name), data, 0o600); err != nil {
			return "", err.Error()
		}
	}
	build := exec.Command("go", "build", "./...")
	build.Dir = pkg
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("the generated Go client does not build: %v\n%s", err, out)
	}
	return pkg, ""
}
