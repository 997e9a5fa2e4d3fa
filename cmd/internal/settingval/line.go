package settingval

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// LookupEnv reads one environment variable and says whether it is set at
// all, as os.LookupEnv does: an empty value is not an absent one.
type LookupEnv = func(string) (string, bool)

// Setting is one row of a program's settings table: variable, flag,
// default, help. The table is the one place a setting is declared: --help
// prints it and the program's generated docs are written from it.
type Setting struct {
	Env, Flag, Def string
	// Doc is the row's meaning, in markdown, for the generated table and,
	// as plain text (backquotes dropped, a link's text kept), for --help.
	// In it, {docs} stands for the path to docs/ from the file
	// (docs/operations.md: empty). Help is a shorter meaning for --help
	// where Doc is a paragraph; empty: Doc's plain text. DocDef is the
	// markdown default shown in the table; empty: Def in backquotes, or
	// "empty" when Def is "".
	Doc, Help, DocDef string
	// EmptySet: a variable set to the empty string means the empty value
	// (EDGE_ADMIN_ADDR= disables the admin listener). Otherwise an empty
	// variable means the default, as an unset one does.
	EmptySet bool
}

// HelpText is what --help says of st: Help, else Doc as plain text.
func (st *Setting) HelpText() string {
	if st.Help != "" {
		return st.Help
	}
	return strings.ReplaceAll(mdLink.ReplaceAllString(st.Doc, "$1"), "`", "")
}

// mdLink is a markdown link; its text is group 1.
var mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// Line is one command's command line: the settings it reads (by variable;
// nil: every row of the table), each a flag overriding its variable, and
// the command's own flags on top. Every command of a program resolves its
// settings through it, so a variable means the same to each.
type Line struct {
	Name     string
	Usage    []string               // printed by --help before the flags
	Settings []string               // nil: every setting
	Flags    func(fs *flag.FlagSet) // the command's own flags; nil: none
}

// Got is a setting's resolved value.
type Got struct {
	Value  string
	Source string // the variable, or "--flag" when the flag gave it: for messages
	Set    bool   // given by the variable or the flag, not defaulted
}

// Parse parses args and resolves the command's settings of table
// (Resolve). --help prints the usage and returns flag.ErrHelp. It returns
// the parser of the resolved settings and the positional arguments.
func (c Line) Parse(table []*Setting, args []string, getenv LookupEnv, stderr io.Writer) (*Parser, []string, error) {
	rows := slices.DeleteFunc(slices.Clone(table), func(st *Setting) bool {
		return c.Settings != nil && !slices.Contains(c.Settings, st.Env)
	})
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if c.Flags != nil {
		c.Flags(fs)
	}
	got, err := Resolve(fs, c.Usage, rows, args, getenv)
	return NewParser(got), fs.Args(), err
}

// Resolve defines a string flag per row on fs, after the command's own
// flags (already defined), parses args and resolves every row by
// variable: the flag's value when given, else the variable's (an empty one
// is the default unless the row is EmptySet), else the default. --help
// prints usage, the command's own flags, then the rows, and returns
// flag.ErrHelp.
func Resolve(fs *flag.FlagSet, usage []string, rows []*Setting, args []string, getenv LookupEnv) (map[string]Got, error) {
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { own = append(own, f) })
	for _, st := range rows {
		fs.String(st.Flag, "", st.HelpText())
	}
	fs.Usage = func() { printUsage(fs.Output(), usage, own, rows) }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	got := make(map[string]Got, len(rows))
	for _, st := range rows {
		g := Got{Value: st.Def, Source: st.Env}
		if v, ok := getenv(st.Env); ok && (v != "" || st.EmptySet) {
			g.Value, g.Set = v, true
		}
		if given[st.Flag] {
			g = Got{fs.Lookup(st.Flag).Value.String(), "--" + st.Flag, true}
		}
		got[st.Env] = g
	}
	return got, nil
}

// printUsage is --help: the usage lines, the command's own flags, then its
// settings.
func printUsage(w io.Writer, usage []string, own []*flag.Flag, rows []*Setting) {
	for _, l := range usage {
		fmt.Fprintln(w, l)
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range own {
			fmt.Fprintf(w, "  --%s (default %q)\n        %s\n", f.Name, f.DefValue, f.Usage)
		}
	}
	fmt.Fprintln(w, "\nSettings (a flag overrides its environment variable):")
	for _, st := range rows {
		fmt.Fprintf(w, "  --%s, %s (default %q)\n        %s\n", st.Flag, st.Env, st.Def, st.HelpText())
	}
}

// NoArgs refuses positional arguments.
func NoArgs(rest []string) error {
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q (see --help)", rest[0])
	}
	return nil
}

// Parser converts resolved settings, collecting every error: a program
// reports each refused setting at once, not only the first.
type Parser struct {
	got     map[string]Got // by variable
	errs    []error
	refused map[string]bool // the variables Read refused
}

// NewParser is the parser of got (Resolve's).
func NewParser(got map[string]Got) *Parser { return &Parser{got: got} }

// Get is env's resolved setting.
func (p *Parser) Get(env string) Got { return p.got[env] }

// Str is env's value as given: a text setting, or a secret (a secret is
// never passed to Bad: errors name its variable only).
func (p *Parser) Str(env string) string { return p.got[env].Value }

// Fail adds err to the errors.
func (p *Parser) Fail(err error) { p.errs = append(p.errs, err) }

// Bad reports g's value as invalid; the value is shown redacted (Redact):
// no start-up error prints a secret.
func (p *Parser) Bad(g Got, want string) {
	p.Fail(fmt.Errorf("invalid %s %q: %s", g.Source, Redact(g.Value), want))
}

// Refused reports whether Read refused env's value: a rule between
// settings skips a value already refused, so that one mistake is one
// error, not a second one about the zero value put in its place.
func (p *Parser) Refused(env string) bool { return p.refused[env] }

// Err is every error so far, joined; nil: none.
func (p *Parser) Err() error { return errors.Join(p.errs...) }

// Read reads env's setting with conv (this package's readers, or a
// package's own parser); a refused value is an error naming the setting
// and the value, redacted.
func Read[T any](p *Parser, env string, conv func(string) (T, error)) T {
	g := p.got[env]
	v, err := conv(g.Value)
	if err != nil {
		p.Bad(g, err.Error())
		if p.refused == nil {
			p.refused = map[string]bool{}
		}
		p.refused[env] = true
	}
	return v
}
