package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every setting run reads is listed, with a default, in README.md's and
// docs/operations.md's settings tables, and the two give the same default
// (issue 11, acceptance 7).
func TestSettingsDocumented(t *testing.T) {
	read := settingsRead(t)
	if len(read) < 20 {
		t.Fatalf("found only %d EDGE_ names in cmd/edge; the pattern is broken", len(read))
	}
	readme := defaultsTable(t, "../../README.md")
	ops := defaultsTable(t, "../../docs/operations.md")
	for _, name := range read {
		r, inReadme := readme[name]
		o, inOps := ops[name]
		switch {
		case !inReadme || r == "":
			t.Errorf("%s: no default in README.md's settings table", name)
		case !inOps || o == "":
			t.Errorf("%s: no default in docs/operations.md's settings table", name)
		case r != o:
			t.Errorf("%s: default %q in README.md, %q in docs/operations.md", name, r, o)
		}
	}
}

var (
	settingInCode  = regexp.MustCompile(`"(EDGE_[A-Z_]+)"`)
	settingInTable = regexp.MustCompile("`(EDGE_[A-Z_]+)`")
)

// settingsRead is every EDGE_ name in the non-test Go files of cmd/edge.
func settingsRead(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("*.go")
	seen := map[string]bool{}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range settingInCode.FindAllStringSubmatch(string(src), -1) {
			if !seen[n[1]] {
				seen[n[1]] = true
				names = append(names, n[1])
			}
		}
	}
	return names
}

// defaultsTable reads the markdown table whose header has a "variable" and
// a "default" column: each `EDGE_...` name in a row's first cell maps to
// that row's default cell.
func defaultsTable(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	col := -1
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "|") {
			col = -1
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "variable" {
			col = -1
			for i, c := range cells {
				if c == "default" {
					col = i
				}
			}
			continue
		}
		if col < 0 || col >= len(cells) {
			continue
		}
		for _, n := range settingInTable.FindAllStringSubmatch(cells[0], -1) {
			out[n[1]] = cells[col]
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no settings table (| variable | ... | default | ...)", path)
	}
	return out
}
