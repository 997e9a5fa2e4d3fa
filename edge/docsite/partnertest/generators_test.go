package partnertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/edge/docsite"
)

// The client generators a partner is told about are the ones these tests
// run, at the versions pinned: oapi-codegen as go.mod's tool, and
// openapi-typescript and TypeScript in .ci/partner/package.json. The
// documentation site's home page and docs/partners.md name those versions,
// so moving a pin without the docs (or the docs without the pin) fails here
// (docs/partners.md, "Client generators"). Needs Go only.
func TestClientGeneratorsNamed(t *testing.T) {
	t.Parallel() // reads files only
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/oapi-codegen/oapi-codegen/v2 (v[0-9.]+)`).FindSubmatch(gomod)
	if m == nil || !strings.Contains(string(gomod), "tool github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen") {
		t.Fatal("go.mod pins no oapi-codegen tool")
	}
	oapi := string(m[1])
	pkg, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "partner", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var npm struct {
		Dev map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(pkg, &npm); err != nil {
		t.Fatal(err)
	}
	ots, tsc := npm.Dev["openapi-typescript"], npm.Dev["typescript"]
	if ots == "" || tsc == "" {
		t.Fatalf(".ci/partner/package.json pins openapi-typescript %q, typescript %q", ots, tsc)
	}
	want := []string{"oapi-codegen</a> " + oapi, "openapi-typescript</a> " + ots, "TypeScript " + tsc, "OpenAPI document is version 3.1"}

	dir := t.TempDir()
	if _, err := docsite.WriteSite(dir, docsite.Options{}); err != nil {
		t.Fatal(err)
	}
	home, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(home), w) {
			t.Errorf("the site's home page does not say %q", w)
		}
	}

	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "partners.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| " + oapi + " ", "| " + ots + ", type-checked with TypeScript " + tsc, "OpenAPI 3.1"} {
		if !strings.Contains(string(doc), w) {
			t.Errorf("docs/partners.md does not say %q", w)
		}
	}
}
