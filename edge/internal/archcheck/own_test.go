package archcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The shipped programs whose linked packages "How much we own" counts.
var shipped = map[string]string{"edge": "./cmd/edge", "pmsim": "./cmd/pmsim"}

// ownTolerance is how far a figure of the table may be from the count
// before the test fails: the table is kept honest without a change of
// every commit that adds a line.
const ownTolerance = 0.03

// ownPkg is one of the module's packages as `go list -json` reports it.
type ownPkg struct {
	ImportPath, Dir, Name              string
	GoFiles, TestGoFiles, XTestGoFiles []string
}

// listOwn runs `go list -json` with args at root and keeps this module's
// packages.
func listOwn(t *testing.T, root string, args ...string) []ownPkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	cmd := exec.Command(goBin, append([]string{"list", "-json"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []ownPkg
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p ownPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.ImportPath == module || strings.HasPrefix(p.ImportPath, module+"/") {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// helperPackage reports whether p is a library for tests: a package named
// testkit or ending in test (keystest, redistest, openapitest...), which
// only _test.go files import (TestArchitecture's column keeps it out of
// production code).
func helperPackage(p ownPkg) bool {
	return p.Name == "testkit" || strings.HasSuffix(p.Name, "test")
}

// fileLines counts the lines of each of dir's files; skipGenerated leaves
// out a file marked generated.
func fileLines(t *testing.T, dir string, files []string, skipGenerated bool) int {
	t.Helper()
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !skipGenerated || !generated.Match(b) {
			n += bytes.Count(b, []byte("\n"))
		}
	}
	return n
}

// ownCount is one row of the table: packages and lines.
type ownCount struct{ pkgs, lines int }

// countOwn counts what docs/architecture.md's "How much we own" shows, by
// the row's first cell.
func countOwn(t *testing.T, root string) map[string]ownCount {
	t.Helper()
	all := listOwn(t, root, "./...")
	prod := map[string]int{} // production lines by import path
	for _, p := range all {
		prod[p.ImportPath] = fileLines(t, p.Dir, p.GoFiles, true)
	}
	rows := map[string]ownCount{}
	linked := map[string]bool{}
	for name, path := range shipped {
		var c ownCount
		for _, p := range listOwn(t, root, "-deps", path) {
			c.pkgs++
			c.lines += prod[p.ImportPath]
			linked[p.ImportPath] = true
		}
		rows["linked into `"+name+"`"] = c
	}
	var either, neither, helpers, tests ownCount
	for _, p := range all {
		switch {
		case linked[p.ImportPath]:
			either.pkgs++
			either.lines += prod[p.ImportPath]
		case helperPackage(p):
			helpers.pkgs++
			helpers.lines += prod[p.ImportPath]
		case len(p.GoFiles) > 0:
			neither.pkgs++
			neither.lines += prod[p.ImportPath]
		}
		tests.lines += fileLines(t, p.Dir, append(append([]string{}, p.TestGoFiles...), p.XTestGoFiles...), false)
	}
	rows["linked into either"] = either
	rows["production code in neither"] = neither
	rows["test helper packages"] = helpers
	rows["`_test.go` files"] = tests
	return rows
}

// documentedOwn reads the table of "How much we own" (the one headed
// "| counted | packages | lines |"): the first cell, up to an
// explanation in parentheses, to its packages and lines ("-" for none).
func documentedOwn(t *testing.T, path string) map[string]ownCount {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]ownCount{}
	section, table := false, false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			section = line == "### How much we own"
		}
		if !strings.HasPrefix(line, "|") {
			table = false
			continue
		}
		if section && strings.HasPrefix(line, "| counted | packages | lines |") {
			table = true
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !table || len(cells) != 3 || strings.HasPrefix(cells[0], "---") {
			continue
		}
		num := func(s string) int {
			s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
			if s == "-" {
				return 0
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("How much we own: %q is not a count: %s", s, line)
			}
			return n
		}
		label := strings.TrimSpace(cells[0])
		if i := strings.Index(label, " ("); i >= 0 {
			label = label[:i] // what follows explains the row
		}
		rows[label] = ownCount{num(cells[1]), num(cells[2])}
	}
	return rows
}

// TestHowMuchWeOwn computes what docs/architecture.md's "How much we own"
// shows: of this module's packages, those `go list -deps` links into each
// shipped program and their production lines (not _test.go, not
// generated), the production code in neither, the test helper packages,
// and the _test.go files; a figure of the table off by more than
// ownTolerance fails. `go test -v -run TestHowMuchWeOwn` prints the
// figures.
func TestHowMuchWeOwn(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	got := countOwn(t, root)
	doc := documentedOwn(t, filepath.Join(root, "docs", "architecture.md"))
	for _, label := range slices.Sorted(maps.Keys(got)) {
		c := got[label]
		t.Logf("| %s | %d | %d |", label, c.pkgs, c.lines)
		d, ok := doc[label]
		if !ok {
			t.Errorf("How much we own has no row %q", label)
			continue
		}
		if d.pkgs != c.pkgs && label != "`_test.go` files" {
			t.Errorf("%s: the table says %d packages, there are %d", label, d.pkgs, c.pkgs)
		}
		if off := float64(d.lines-c.lines) / float64(c.lines); off > ownTolerance || off < -ownTolerance {
			t.Errorf("%s: the table says %d lines, the count is %d (more than %.0f%% off): update docs/architecture.md", label, d.lines, c.lines, 100*ownTolerance)
		}
	}
	for label := range doc {
		if _, ok := got[label]; !ok {
			t.Errorf("How much we own has a row %q that nothing counts", label)
		}
	}
}
