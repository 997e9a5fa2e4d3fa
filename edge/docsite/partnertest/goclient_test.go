package partnertest

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The generated Go types give code, status and errors of every problem
// schema, and the health status, a concrete type: a partner branches on
// them without decoding the body twice (docs/contract.md section 13).
func TestGoClientTypesAreConcrete(t *testing.T) {
	t.Parallel() // reads files only
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(goClientFromDocs(t), "client.gen.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	structs := map[string]*ast.StructType{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range gd.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					structs[ts.Name.Name] = st
				}
			}
		}
	}
	checked := 0
	for name, st := range structs {
		fields := map[string]string{}
		for _, fld := range st.Fields.List {
			for _, n := range fld.Names {
				var b bytes.Buffer
				_ = ast.Fprint(&b, nil, fld.Type, nil)
				fields[n.Name] = typeString(fld.Type)
			}
		}
		want := []string{}
		switch {
		case strings.HasSuffix(name, "Problem") || name == "Problem":
			want = []string{"Code", "Status", "Errors"}
		case name == "HealthOk" || name == "HealthUnhealthy":
			want = []string{"Status"}
		}
		for _, w := range want {
			checked++
			ty, ok := fields[w]
			if !ok || ty == "interface{}" || ty == "any" || strings.Contains(ty, "interface") || strings.Contains(ty, "json.RawMessage") {
				t.Errorf("%s.%s is %q, want a concrete type", name, w, ty)
			}
		}
	}
	if checked < 3*17+2 { // 16 responses, Problem, 2 health bodies
		t.Errorf("checked only %d fields: the generated client lacks the problem schemas", checked)
	}
}

func typeString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return "*" + typeString(x.X)
	case *ast.ArrayType:
		return "[]" + typeString(x.Elt)
	case *ast.SelectorExpr:
		return typeString(x.X) + "." + x.Sel.Name
	case *ast.InterfaceType:
		return "interface{}"
	case *ast.MapType:
		return "map[" + typeString(x.Key) + "]" + typeString(x.Value)
	}
	return "?"
}

// A partner's Go client against the demo (testdata/goclient): every page
// of the list (those after the first pinned to it with asOf), every
// property by id, the events feed, and a 404, 422s (perPage, after, asOf)
// and a 401 decoded into their typed problems; no answer fails to decode into its generated
// type. The client is generated here from docs/openapi.yaml, and the test
// runs in its module.
func TestGoClientAgainstDemo(t *testing.T) {
	d := startDemo(t)
	pkg := goClientFromDocs(t)
	changedDemo(t, d)
	runGoClientTest(t, d, pkg, "TestGoClientAgainstDemo")
}

// A partner's Go client manages a webhook endpoint on the demo through
// each of the five operations (testdata/goclient/webhooks_demo_test.go):
// create (201, Location, the secret) pointing at a receiver on loopback,
// list and get (no secret), enable (200 while enabled), delete (204), then
// 404 (docs/contract.md section 26).
func TestGoClientWebhooksAgainstDemo(t *testing.T) {
	d := startDemo(t)
	pkg := goClientFromDocs(t)
	runGoClientTest(t, d, pkg, "TestGoClientWebhookEndpoints")
}

// runGoClientTest copies the tests of testdata/goclient next to the
// generated client in pkg and runs the one named name there, against d.
func runGoClientTest(t *testing.T, d *demo, pkg, name string) {
	t.Helper()
	progs, err := filepath.Glob("testdata/goclient/*_test.go")
	if err != nil || len(progs) == 0 {
		t.Fatalf("testdata/goclient has no test: %v", err)
	}
	for _, p := range progs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, filepath.Base(p)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^"+name+"$", "./...")
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off",
		"DEMO_BASE="+d.base, "DEMO_DOCS_URL="+d.docsURL, "DEMO_LIVE_KEY="+liveKey, "DEMO_UNKNOWN_FROM="+unknownFrom())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the generated client against the demo (%s): %v\n%s", name, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name+" ") {
		t.Fatalf("%s did not run:\n%s", name, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

var (
	goClientOnce sync.Once
	goClientPkg  string
	goClientErr  string
)

// goClientFromDocs generates the Go client from docs/openapi.yaml once for
// the package, into a module of its own under a temporary directory
// (removed by TestMain), and returns its folder.
func goClientFromDocs(t *testing.T) string {
	t.Helper()
	goClientOnce.Do(func() {
		dir, err := os.MkdirTemp("", "partnertest-goclient-")
		if err != nil {
			goClientErr = err.Error()
			return
		}
		goClientTmp = dir
		doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "openapi.yaml"))
		if err != nil {
			goClientErr = err.Error()
			return
		}
		goClientPkg, goClientErr = generateGoClient(dir, filepath.Join(dir, "openapi.yaml"), doc)
	})
	if goClientErr != "" {
		if strings.HasPrefix(goClientErr, "oapi-codegen: ") {
			need(t, "go tool oapi-codegen (module proxy)", errors.New(goClientErr))
		}
		t.Fatal(goClientErr)
	}
	return goClientPkg
}

// goClientTmp is goClientFromDocs's directory, for TestMain to remove.
var goClientTmp string
