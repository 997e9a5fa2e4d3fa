package main

// The settings table of docs/operations.md is generated from settingTable
// (settings.go), the one place a setting is declared, so the docs cannot
// drift from what run parses. README.md, the front door, holds no table: it
// links there. After adding or changing a row there, run
//
//	go generate ./cmd/edge
//
// The generator is TestSettingsTables (below) run with
// -update-docs: it renders the tables from the very rows parseSettings uses
// and rewrites the text between the settings-table marker comments. Without
// the flag the same test fails while the file is out of date, and CI runs
// `go generate ./... && git diff --exit-code` (.ci/run).

//go:generate go test -run=TestSettingsTables -update-docs .

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/cmd/internal/settingval"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the settings table of docs/operations.md (go generate ./cmd/edge)")

// settingsDoc is one markdown file holding a generated settings table.
type settingsDoc struct {
	path      string
	withFlags bool   // a flag column
	docsDir   string // path from the file to docs/, for links
}

// settingsDocs are the files with a generated table: docs/operations.md
// only (README.md stays a front door of at most 150 lines and links to it).
var settingsDocs = []settingsDoc{
	{path: "../../docs/operations.md", withFlags: true, docsDir: ""},
}

const (
	tableBegin = "<!-- settings table: generated from cmd/edge/settings.go by `go generate ./cmd/edge`; do not edit -->"
	tableEnd   = "<!-- end of settings table -->"
)

// The settings table in docs/operations.md is exactly what settingTable
// renders (docs/architecture.md); with -update-docs the test writes it
// instead (go generate ./cmd/edge). README.md has none: a table there would
// be a second copy to keep, and the front door's length (at most 150 lines)
// would go to it.
func TestSettingsTables(t *testing.T) {
	if readme, err := os.ReadFile("../../README.md"); err != nil || bytes.Contains(readme, []byte(tableBegin)) {
		t.Errorf("README.md holds a settings table (or cannot be read: %v): it belongs to docs/operations.md only", err)
	}
	for _, d := range settingsDocs {
		old, err := os.ReadFile(d.path)
		if err != nil {
			t.Fatal(err)
		}
		updated, err := spliceTable(old, renderTable(settingTable(), d))
		if err != nil {
			t.Fatalf("%s: %v", d.path, err)
		}
		switch {
		case bytes.Equal(old, updated):
		case *updateDocs:
			if err := os.WriteFile(d.path, updated, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: settings table rewritten", d.path)
		default:
			t.Errorf("%s: the settings table is not the one settingTable renders; run go generate ./cmd/edge\n%s",
				filepath.Clean(d.path), firstDiff(old, updated))
		}
	}
}

// renderTable is the markdown table of rows, one row a setting, closed by
// the OpenTelemetry SDK's own variables, which the edge passes through.
func renderTable(rows []*settingval.Setting, d settingsDoc) string {
	var b strings.Builder
	if d.withFlags {
		b.WriteString("| variable | flag | default | meaning |\n|---|---|---|---|\n")
	} else {
		b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	}
	for _, st := range rows {
		def := st.DocDef
		switch {
		case def != "":
		case st.Def == "":
			def = "empty"
		default:
			def = "`" + st.Def + "`"
		}
		meaning := st.Doc
		if meaning == "" {
			meaning = st.Help
		}
		meaning = strings.ReplaceAll(strings.ReplaceAll(meaning, "{docs}", d.docsDir), "docs/../", "")
		cells := []string{"`" + st.Env + "`"}
		if d.withFlags {
			cells = append(cells, "`--"+st.Flag+"`")
		}
		cells = append(cells, def, meaning)
		writeRow(&b, cells)
	}
	otel := []string{"`OTEL_*`"}
	if d.withFlags {
		otel = append(otel, "")
	}
	otel = append(otel, "OpenTelemetry's own", "standard SDK variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_EXPORTER`, "+
		"`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, `OTEL_SDK_DISABLED`, ...); see ["+d.docsDir+"observability.md]("+d.docsDir+"observability.md)")
	writeRow(&b, otel)
	return b.String()
}

// writeRow writes one table row; a | inside a cell is escaped.
func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		c = strings.ReplaceAll(c, "|", `\|`)
		if c == "" {
			b.WriteString(" |")
			continue
		}
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// spliceTable replaces what lies between the marker lines of doc by table.
func spliceTable(doc []byte, table string) ([]byte, error) {
	begin := bytes.Index(doc, []byte(tableBegin+"\n"))
	end := bytes.Index(doc, []byte(tableEnd))
	if begin < 0 || end < begin || bytes.Count(doc, []byte(tableBegin)) != 1 {
		return nil, errors.New("want exactly one settings table between the lines " + tableBegin + " and " + tableEnd)
	}
	start := begin + len(tableBegin) + 1
	out := make([]byte, 0, len(doc)+len(table))
	out = append(out, doc[:start]...)
	out = append(out, table...)
	return append(out, doc[end:]...), nil
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d\n  file:      %s\n  generated: %s", i+1, gl, wl)
		}
	}
	return ""
}

func TestSpliceTable(t *testing.T) {
	doc := "intro\n" + tableBegin + "\n| old |\n" + tableEnd + "\nrest\n"
	got, err := spliceTable([]byte(doc), "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "intro\n" + tableBegin + "\n| new |\n" + tableEnd + "\nrest\n"; string(got) != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
	for _, bad := range []string{"no markers\n", tableEnd + "\n" + tableBegin + "\n", doc + doc} {
		if _, err := spliceTable([]byte(bad), "x"); err == nil {
			t.Errorf("%q: spliced, want an error", bad)
		}
	}
}

// Every setting name the edge's code mentions is a row of settingTable,
// so none is read (or named in an error) without being documented.
func TestSettingsNamedAreInTable(t *testing.T) {
	inTable := map[string]bool{}
	for _, st := range settingTable() {
		if inTable[st.Env] {
			t.Errorf("%s: two rows", st.Env)
		}
		inTable[st.Env] = true
	}
	files, _ := filepath.Glob("*.go")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range settingInCode.FindAllSubmatch(src, -1) {
			n++
			if !inTable[string(m[1])] {
				t.Errorf("%s names %s, which settingTable lacks", f, m[1])
			}
		}
	}
	if n < len(inTable) {
		t.Fatalf("found only %d setting names in cmd/edge; the pattern is broken", n)
	}
}

var settingInCode = regexp.MustCompile(`"((?:EDGE|PMS)_[A-Z_]*[A-Z])"`) // a name; "EDGE_LOG_" is a prefix
