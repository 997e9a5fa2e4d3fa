package settingval

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// A flag beats its variable; an empty variable is the default unless the
// setting takes empty; --help lists every setting with its default.
func TestResolve(t *testing.T) {
	rows := []*Setting{{Env: "A", Flag: "a", Def: "da"}, {Env: "B", Flag: "b", Def: "db", EmptySet: true},
		{Env: "C", Flag: "c", Def: "dc"}, {Env: "D", Flag: "d", Def: "dd"}}
	env := map[string]string{"A": "", "B": "", "C": "vc", "D": "vd"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	get, err := Resolve(fs, nil, rows, []string{"--d", "fd", "rest"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Got{"A": {"da", "A", false}, "B": {"", "B", true}, "C": {"vc", "C", true}, "D": {"fd", "--d", true}}
	for k, w := range want {
		if get[k] != w {
			t.Errorf("%s: %+v, want %+v", k, get[k], w)
		}
	}
	if fs.NArg() != 1 || fs.Arg(0) != "rest" {
		t.Errorf("positional arguments %q", fs.Args())
	}
	var help strings.Builder
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(&help)
	if _, err := Resolve(fs, []string{"usage: t"}, rows, []string{"--help"}, getenv); err != flag.ErrHelp {
		t.Fatalf("--help: %v", err)
	}
	for _, st := range rows {
		if !strings.Contains(help.String(), "--"+st.Flag+", "+st.Env+` (default "`+st.Def+`")`) {
			t.Errorf("--help lacks %s:\n%s", st.Env, help.String())
		}
	}
}

// A command reads only its settings, each resolved once, and the
// parser reports every refused value, redacted, not only the first.
func TestLineParse(t *testing.T) {
	table := []*Setting{{Env: "A", Flag: "a", Def: "1s"}, {Env: "B", Flag: "b", Def: "x"}, {Env: "C", Flag: "c", Def: "2"}}
	env := map[string]string{"A": "soon", "C": "-1"}
	var own bool
	line := Line{Name: "t", Settings: []string{"A", "C"}, Flags: func(fs *flag.FlagSet) { fs.BoolVar(&own, "own", false, "") }}
	p, rest, err := line.Parse(table, []string{"--own", "--c", "https://u:secret@h/", "arg"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !own || !slices.Equal(rest, []string{"arg"}) || NoArgs(rest) == nil {
		t.Errorf("own flag %v, rest %q", own, rest)
	}
	if len(table) != 3 {
		t.Errorf("Parse changed the table: %d rows", len(table))
	}
	if g := p.Get("B"); g != (Got{}) {
		t.Errorf("B is not the command's, got %+v", g)
	}
	Read(p, "A", Duration)
	Read(p, "C", Count)
	msg := p.Err().Error()
	for _, want := range []string{`invalid A "soon"`, `invalid --c "https://u:xxxxx@h/"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %s: %s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("errors show a secret: %s", msg)
	}
}

// --help says Help, else the row's markdown meaning as plain text.
func TestHelpText(t *testing.T) {
	for _, tc := range []struct {
		st   Setting
		want string
	}{
		{Setting{Doc: "`on` or `off`; see [scaling.md]({docs}scaling.md#forms)", Help: "on or off"}, "on or off"},
		{Setting{Doc: "`on` or `off`; see [scaling.md]({docs}scaling.md#forms)"}, "on or off; see scaling.md"},
	} {
		if got := tc.st.HelpText(); got != tc.want {
			t.Errorf("HelpText of %+v = %q, want %q", tc.st, got, tc.want)
		}
	}
}

// Refused names the settings Read refused, and only those: a rule between
// settings skips them, so one mistake is one error.
func TestParserRefused(t *testing.T) {
	p := NewParser(map[string]Got{"N": {Value: "abc", Source: "N"}, "M": {Value: "3", Source: "M"}})
	Read(p, "N", Count)
	Read(p, "M", Count)
	if !p.Refused("N") || p.Refused("M") || p.Refused("O") {
		t.Errorf("Refused: N %v, M %v, O %v; want N only", p.Refused("N"), p.Refused("M"), p.Refused("O"))
	}
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), `invalid N "abc"`) {
		t.Errorf("Err: %v", err)
	}
}
