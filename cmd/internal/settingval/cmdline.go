package settingval

import (
	"flag"
	"fmt"
)

// Spec is one setting on a command line: its variable, its flag, its
// default and its help.
type Spec struct {
	Env, Flag, Def, Help string
	// EmptySet: a variable set to the empty string means the empty value
	// (EDGE_ADMIN_ADDR= disables the admin listener). Otherwise an empty
	// variable means the default, as an unset one does.
	EmptySet bool
}

// Got is a setting's resolved value.
type Got struct {
	Value  string
	Source string // the variable, or "--flag" when the flag gave it: for messages
	Set    bool   // given by the variable or the flag, not defaulted
}

// Parse is a command line over specs: it defines a string flag per spec
// on fs, after the command's own flags (already defined), parses args and
// resolves every spec: the flag's value when given, else the variable's,
// else Def. getenv is os.LookupEnv or its like. --help prints usage's
// lines, the command's own flags, then the specs, and returns
// flag.ErrHelp. It returns what each spec resolved to, by variable.
func Parse(fs *flag.FlagSet, usage []string, specs []Spec, args []string, getenv func(string) (string, bool)) (map[string]Got, error) {
	own := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { own[f.Name] = true })
	flagVals := make(map[string]*string, len(specs))
	for _, s := range specs {
		flagVals[s.Flag] = fs.String(s.Flag, "", fmt.Sprintf("%s (env %s, default %q)", s.Help, s.Env, s.Def))
	}
	fs.Usage = func() { printUsage(fs, usage, own, specs) }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	got := make(map[string]Got, len(specs))
	for _, s := range specs {
		g := Got{Value: s.Def, Source: s.Env}
		if v, ok := getenv(s.Env); ok && (v != "" || s.EmptySet) {
			g.Value, g.Set = v, true
		}
		if given[s.Flag] {
			g = Got{Value: *flagVals[s.Flag], Source: "--" + s.Flag, Set: true}
		}
		got[s.Env] = g
	}
	return got, nil
}

// printUsage is --help: the usage lines, the command's own flags, then its
// settings.
func printUsage(fs *flag.FlagSet, usage []string, own map[string]bool, specs []Spec) {
	w := fs.Output()
	for _, l := range usage {
		fmt.Fprintln(w, l)
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		fs.VisitAll(func(f *flag.Flag) {
			if own[f.Name] {
				fmt.Fprintf(w, "  --%s (default %q)\n        %s\n", f.Name, f.DefValue, f.Usage)
			}
		})
	}
	fmt.Fprintln(w, "\nSettings (a flag overrides its environment variable):")
	for _, s := range specs {
		fmt.Fprintf(w, "  --%s, %s (default %q)\n        %s\n", s.Flag, s.Env, s.Def, s.Help)
	}
}
