package archcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/partner-edge/partner-edge"

// The size rules of docs/architecture.md ("Sizes"): no count of files,
// which would count against one concern per file, but a bound on a file
// (one concern is short) and on a package's production lines (past it, a
// package has so far always held two concerns).
const (
	maxFileLines    = 600
	maxPackageLines = 3500
)

// listed is one package as `go list -json` reports it.
type listed struct {
	ImportPath string
	Name       string
	Doc        string // the package comment's first sentence
	Dir        string
	Imports    []string
}

// goList runs `go list -json ./...` at the module root.
func goList(t *testing.T, root string) []listed {
	t.Helper()
	// go test puts the go command that runs it first on PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to list the packages: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// documented reads the package table of docs/architecture.md (the rows of
// its "Packages" section; other sections' tables are not it): package path
// (relative to the module) to the module's packages it may import.
func documented(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	sc := bufio.NewScanner(f)
	inPackages := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inPackages = line == "## Packages"
		}
		if !inPackages || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("table row with %d cells, want 3: %s", len(cells), line)
		}
		pkg := strings.Trim(strings.TrimSpace(cells[0]), "`")
		var allowed []string
		for item := range strings.SplitSeq(cells[2], ",") {
			item = strings.TrimSpace(item)
			if item == "(none)" || item == "" {
				continue
			}
			allowed = append(allowed, strings.Trim(item, "`"))
		}
		if _, dup := rows[pkg]; dup {
			t.Errorf("%s is in the table twice", pkg)
		}
		rows[pkg] = allowed
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no package table found")
	}
	return rows
}

// TestArchitecture holds docs/architecture.md to the code: every package
// named there exists, every package of the module is named there, each
// imports only the module's packages its row allows, and none breaks the
// size rules (maxFileLines, maxPackageLines).
func TestArchitecture(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rows := documented(t, filepath.Join(root, "docs", "architecture.md"))
	pkgs := goList(t, root)
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		seen[rel] = true
		allowed, ok := rows[rel]
		if !ok {
			t.Errorf("package %s is not in docs/architecture.md's table", rel)
		}
		for _, imp := range p.Imports {
			own, isOwn := strings.CutPrefix(imp, module+"/")
			if !isOwn {
				continue
			}
			if !slices.Contains(allowed, own) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow", rel, own)
			}
		}
		total := 0
		for name, n := range productionLines(t, p.Dir) {
			total += n
			if n > maxFileLines {
				t.Errorf("%s/%s has %d lines, more than %d: more than one concern?", rel, name, n, maxFileLines)
			}
		}
		if total > maxPackageLines {
			t.Errorf("%s has %d production lines, more than %d: two packages in one?", rel, total, maxPackageLines)
		}
	}
	for pkg, allowed := range rows {
		if !seen[pkg] {
			t.Errorf("docs/architecture.md names %s, which does not exist", pkg)
		}
		for _, a := range allowed {
			if _, ok := rows[a]; !ok {
				t.Errorf("%s may import %s, which is not in the table", pkg, a)
			}
		}
	}
}

// productionLines counts the lines (blank and comment lines included) of
// each non-test, non-generated .go file of dir, by file name.
func productionLines(t *testing.T, dir string) map[string]int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !generated.Match(b) {
			lines[name] = bytes.Count(b, []byte("\n"))
		}
	}
	return lines
}

// generated matches the line that marks a generated Go file.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestPackageDocs: `go doc` of every package says what it holds, opening
// "Package name ..." (a program: "Command name ..."), so the comment is
// in a file go doc reads (a package of tests only keeps it in doc.go).
func TestPackageDocs(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range goList(t, root) {
		want := "Package " + p.Name + " "
		if p.Name == "main" {
			want = "Command " + filepath.Base(p.Dir) + " "
		}
		if !strings.HasPrefix(p.Doc, want) {
			t.Errorf("%s: package doc %q, want it to open %q", p.ImportPath, p.Doc, want)
		}
	}
}
