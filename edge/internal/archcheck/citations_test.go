package archcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository carries its own contract documents (docs/contract.md,
// docs/partner-api.md, docs/pms-api.md, docs/operations.md): a clone of it
// alone must be able to open every reason its code and docs give. These
// patterns name documents that live outside the repository; the names are
// split so that this file does not match itself.
var outside = regexp.MustCompile(`DECISIONS` + `\.md|pms-internal` + `-api\.md|partner-api` + `-v1\.md|\.\./` + `shared|shared` + `/spec`)

// cited finds repository paths under docs/ named in code and documents.
var cited = regexp.MustCompile("(?:^|[\\s(`\"'\\[])(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_])")

// trackedFiles lists the files git tracks under root.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for f := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

// textual reports whether a tracked file is source or documentation whose
// citations count: Go, Markdown, YAML, JSON schemas and the CI scripts.
// Committed benchmark results are a record of their day and are not edited.
func textual(f string) bool {
	if strings.HasPrefix(f, "bench/results/") || strings.Contains(f, "package-lock.json") {
		return false
	}
	switch filepath.Ext(f) {
	case ".go", ".md", ".yaml", ".yml", ".json", ".mjs", ".sh":
		return true
	}
	return strings.HasPrefix(f, ".ci/") && filepath.Ext(f) == ""
}

// TestCitationsStayInTheRepository fails on any file that cites a contract
// document outside the repository, and on any docs/... path cited in code
// or docs that does not exist.
func TestCitationsStayInTheRepository(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.ToSlash(filepath.Join("edge", "internal", "archcheck", "citations_test.go"))
	for _, f := range trackedFiles(t, root) {
		if !textual(f) || f == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, outside the repository: cite docs/contract.md, docs/partner-api.md, docs/pms-api.md or docs/operations.md", f, i+1, m)
			}
			for _, m := range cited.FindAllStringSubmatch(line, -1) {
				p := strings.TrimRight(m[1], ".")
				if strings.ContainsAny(p, "*") || strings.HasSuffix(p, "/") {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s:%d cites %s, which does not exist", f, i+1, p)
				}
			}
		}
	}
}
