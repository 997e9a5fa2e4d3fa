package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// No test depends on the calendar (docs/testing.md, "Time in tests"): a
// test package that fixes a date (time.Date with a literal year) gives its
// clock to every component it builds whose configuration has one (a field
// `Now func() time.Time`, where nil falls back to time.Now). Such a
// component built without it trims, expires or stamps by the wall clock
// while the test's data sits on the fixed day: the test then passes or
// fails by the day it runs, as the shared feed's did from 2026-11-29 on.
//
// The rule is checked on the source: every composite literal of a clocked
// type in such a package's tests sets Now, or the function holding it sets
// the field afterwards (cfg.Now = ...), or hands the literal to a helper
// of the package's tests that gives its configuration the test's clock
// (cfg.Now = c.Now: newFeed in upstream/events) or refuses one without
// (cfg.Now == nil: newStore in upstream/events/redisevents).
func TestFixedDatesGiveTheirClock(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := trackedFiles(t, root)
	fset := token.NewFileSet()
	clocked := map[string]map[string]bool{} // import path -> type names with a Now clock
	tests := map[string][]*ast.File{}       // directory -> its parsed test files
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.ToSlash(filepath.Dir(f))
		if strings.HasSuffix(f, "_test.go") {
			tests[dir] = append(tests[dir], file)
			continue
		}
		for _, name := range clockedTypes(file) {
			path := module + "/" + dir
			if clocked[path] == nil {
				clocked[path] = map[string]bool{}
			}
			clocked[path][name] = true
		}
	}
	if len(clocked) == 0 {
		t.Fatal("no configuration with a Now clock found: the check reads nothing")
	}
	var bad []string
	for dir, fs := range tests {
		if !slices.ContainsFunc(fs, fixesADate) {
			continue
		}
		own := clocked[module+"/"+dir]
		helpers := clockHelpers(fs)
		for _, file := range fs {
			imports := importNames(file)
			ast.Inspect(file, func(n ast.Node) bool {
				fn, ok := n.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					return true
				}
				for _, lit := range clocklessLiterals(fn.Body, helpers, func(typ ast.Expr) bool {
					switch typ := typ.(type) {
					case *ast.Ident:
						return own[typ.Name] && !strings.HasSuffix(file.Name.Name, "_test")
					case *ast.SelectorExpr:
						pkg, ok := typ.X.(*ast.Ident)
						return ok && clocked[imports[pkg.Name]][typ.Sel.Name]
					}
					return false
				}) {
					bad = append(bad, fset.Position(lit.Pos()).String())
				}
				return false
			})
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		rel, _ := filepath.Rel(root, b)
		t.Errorf("%s: a component built without the test's clock in a package whose tests fix a date: set Now", rel)
	}
}

// clockHelpers lists the functions of a package's test files that take a
// configuration and give it its clock (p.Now = ..., p a parameter) or
// refuse it without one (p.Now == nil): a literal handed to one is
// checked there.
func clockHelpers(fs []*ast.File) map[string]bool {
	helpers := map[string]bool{}
	for _, file := range fs {
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Recv != nil {
				continue
			}
			params := map[string]bool{}
			for _, f := range fn.Type.Params.List {
				for _, n := range f.Names {
					params[n.Name] = true
				}
			}
			isParamsNow := func(e ast.Expr) bool {
				sel, ok := e.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Now" {
					return false
				}
				id, ok := sel.X.(*ast.Ident)
				return ok && params[id.Name]
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					helpers[fn.Name.Name] = helpers[fn.Name.Name] || slices.ContainsFunc(n.Lhs, isParamsNow)
				case *ast.BinaryExpr:
					if id, ok := n.Y.(*ast.Ident); ok && n.Op == token.EQL && id.Name == "nil" && isParamsNow(n.X) {
						helpers[fn.Name.Name] = true
					}
				}
				return !helpers[fn.Name.Name]
			})
		}
	}
	return helpers
}

// clockedTypes lists file's struct types with a field `Now func() time.Time`.
func clockedTypes(file *ast.File) []string {
	var names []string
	for _, d := range file.Decls {
		gen, ok := d.(*ast.GenDecl)
		if !ok || gen.Tok != token.TYPE {
			continue
		}
		for _, spec := range gen.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, f := range st.Fields.List {
				if isClock(f.Type) && slices.ContainsFunc(f.Names, func(n *ast.Ident) bool { return n.Name == "Now" }) {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	return names
}

// isClock reports whether typ is func() time.Time.
func isClock(typ ast.Expr) bool {
	fn, ok := typ.(*ast.FuncType)
	if !ok || fn.Params.NumFields() != 0 || fn.Results.NumFields() != 1 {
		return false
	}
	sel, ok := fn.Results.List[0].Type.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "time" && sel.Sel.Name == "Time"
}

// fixesADate reports whether file calls time.Date with a literal year.
func fixesADate(file *ast.File) bool {
	found := false
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return !found
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Date" {
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.INT {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// importNames maps the names file refers to its imports by to their paths.
func importNames(file *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = path
	}
	return m
}

// clocklessLiterals lists the composite literals in body of a type that
// isClocked says has a clock, which neither set Now, nor are given Now
// later in body (x.Now = ...), nor go to one of helpers (clockHelpers).
func clocklessLiterals(body *ast.BlockStmt, helpers map[string]bool, isClocked func(ast.Expr) bool) []*ast.CompositeLit {
	setLater := false
	checked := map[*ast.CompositeLit]bool{}
	var lits []*ast.CompositeLit
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "Now" {
					setLater = true
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && helpers[id.Name] {
				for _, a := range n.Args {
					if lit, ok := a.(*ast.CompositeLit); ok {
						checked[lit] = true
					}
				}
			}
		case *ast.CompositeLit:
			if n.Type != nil && isClocked(n.Type) && !setsNow(n) {
				lits = append(lits, n)
			}
		}
		return true
	})
	if setLater {
		return nil
	}
	return slices.DeleteFunc(lits, func(l *ast.CompositeLit) bool { return checked[l] })
}

// setsNow reports whether lit has a Now: element.
func setsNow(lit *ast.CompositeLit) bool {
	return slices.ContainsFunc(lit.Elts, func(e ast.Expr) bool {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return false
		}
		id, ok := kv.Key.(*ast.Ident)
		return ok && id.Name == "Now"
	})
}

// clockHelpers takes a helper that gives its parameter's configuration a
// clock or refuses one without, and no other function.
func TestClockHelpers(t *testing.T) {
	const src = `package p

func gives(t *testing.T, c *clock, cfg Config) *Feed { cfg.Mode, cfg.Now = "live", c.Now; return New(cfg) }

func refuses(t *testing.T, cfg Config) *Store {
	if cfg.Now == nil {
		t.Fatal("no clock")
	}
	return New(cfg)
}

func sets(t *testing.T, cfg Config) *Feed { cfg.Mode = "live"; return New(cfg) }

func local(t *testing.T, cfg Config) *Feed { other := Config{}; other.Now = time.Now; return New(cfg) }

func (h *harness) method(cfg Config) { cfg.Now = h.now }
`
	file, err := parser.ParseFile(token.NewFileSet(), "p_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := clockHelpers([]*ast.File{file})
	for name, want := range map[string]bool{"gives": true, "refuses": true, "sets": false, "local": false, "method": false} {
		if got[name] != want {
			t.Errorf("%s: a clock helper %v, want %v", name, got[name], want)
		}
	}
}
