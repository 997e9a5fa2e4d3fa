package keys

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Usage is the help text of `edge keys`.
const Usage = `usage: edge keys COMMAND [flags] [ID]

Commands (docs/contract.md section 18; every one takes --file, default EDGE_KEYS_FILE):
  add      mint a key, print it once, add its record to the file (created when missing)
             --brand B (default EDGE_BRAND) --mode live|test [--partner NAME]
             [--properties id,id|*] [--scopes s,s] [--scope S]... [--expires RFC3339|DURATION]
             [--rate-limit PER_SECOND [--burst N]] [--client-id ID] [--json]
  list     the records, never a key or a digest [--json]
  suspend  ID   refuse the key with 403 API_KEY_SUSPENDED
  resume   ID   make a suspended key active again
  revoke   ID   remove the record: the key answers 401 from then on
  rotate   ID   mint a successor with the same grants, print it once; the old
                key keeps working for --overlap (default 24h) [--json]; a key
                that already has a successor is refused without --force
  check    load the file exactly as the edge does: exit 1 with the reason, 0 when good
  new      print a minted key and its record without touching any file

Scopes: properties:read (every route; the default), webhooks:manage (the
webhook endpoints' routes besides): --scope webhooks:manage adds it to the
default, --scopes names the whole list.

Flags may come before or after ID. Edits are atomic and keep the file's mode,
owner and group (a new file: mode 0600), serialised with a lock file beside
the key file (FILE.lock; one that is a symbolic link is refused), and refused
when the result would not load; a running edge picks each change up by itself.
`

// UsageError is a command line Command cannot run: the program exits with
// status 2 for it (1 for every other error).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageError(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// Command is "edge keys ARGS..." (docs/contract.md section 18): it parses
// the flags and hands the work to Editor. getenv is os.LookupEnv or its
// like (EDGE_KEYS_FILE, EDGE_BRAND are the defaults of --file, --brand).
// Usage errors are *UsageError; --help prints Usage to stdout.
func Command(args []string, getenv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, Usage)
		return usageError("keys: a command is required")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, Usage)
		return nil
	case "new":
		if err := RunNew(args, stdout, stderr, rand.Reader); !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	case "add", "list", "suspend", "resume", "revoke", "rotate", "check":
	default:
		fmt.Fprint(stderr, Usage)
		return usageError("keys: unknown command %q", cmd)
	}

	fs := flag.NewFlagSet("edge keys "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; --help prints to stdout
	def, _ := getenv("EDGE_KEYS_FILE")
	file := fs.String("file", def, "the key file (default EDGE_KEYS_FILE)")
	var jsonOut *bool
	if cmd == "add" || cmd == "list" || cmd == "rotate" {
		jsonOut = fs.Bool("json", false, "print JSON")
	}
	var a addFlags
	if cmd == "add" {
		a.define(fs, getenv)
	}
	overlap, force := DefaultOverlap, false
	if cmd == "rotate" {
		fs.DurationVar(&overlap, "overlap", DefaultOverlap, "how long the old key keeps working")
		fs.BoolVar(&force, "force", false, "rotate a key that already has a successor")
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, Usage)
		return nil
	}
	if err != nil {
		return usageError("keys %s: %v", cmd, err)
	}
	wantID := cmd == "suspend" || cmd == "resume" || cmd == "revoke" || cmd == "rotate"
	switch {
	case wantID && len(pos) != 1:
		return usageError("keys %s: want exactly one key id (edge keys %s key_...)", cmd, cmd)
	case !wantID && len(pos) > 0:
		return usageError("keys %s: unexpected argument %q", cmd, pos[0])
	case *file == "":
		return usageError("keys %s: no key file: set EDGE_KEYS_FILE or --file", cmd)
	}
	ed := Editor{Path: *file, Now: time.Now, Random: rand.Reader}

	switch cmd {
	case "add":
		k, err := a.newKey(fs, ed.Now())
		if err != nil {
			return usageError("keys add: %v", err)
		}
		token, rec, err := ed.Add(k)
		if err != nil {
			return fmt.Errorf("keys add: %w", err)
		}
		return printKey(stdout, stderr, *jsonOut, token, rec.ID)
	case "list":
		list, err := ed.List()
		if err != nil {
			return fmt.Errorf("keys list: %w", err)
		}
		return printList(stdout, *jsonOut, list)
	case "suspend", "resume":
		status := map[string]string{"suspend": StatusSuspended, "resume": StatusActive}[cmd]
		if err := ed.SetStatus(pos[0], status); err != nil {
			return fmt.Errorf("keys %s: %w", cmd, err)
		}
		fmt.Fprintf(stdout, "%s is %s\n", pos[0], status)
	case "revoke":
		if err := ed.Revoke(pos[0]); err != nil {
			return fmt.Errorf("keys revoke: %w", err)
		}
		fmt.Fprintf(stdout, "%s revoked: its record is removed\n", pos[0])
	case "rotate":
		token, rec, err := ed.Rotate(pos[0], overlap, force)
		if err != nil {
			return fmt.Errorf("keys rotate: %w", err)
		}
		fmt.Fprintf(stderr, "%s keeps working until %s; then only %s does\n",
			pos[0], ed.Now().Add(overlap).UTC().Format(time.RFC3339), rec.ID)
		return printKey(stdout, stderr, *jsonOut, token, rec.ID)
	case "check":
		sum, err := Check(*file, ed.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "key file %s loads: %d keys (%d suspended, %d expired)\n", *file, sum.Keys, sum.Suspended, sum.Expired)
		if sum.Keys == 0 {
			fmt.Fprintln(stderr, "warning: no keys: an edge with this file authenticates no one and reports itself unhealthy")
		}
	}
	return nil
}

// addFlags are the grants `edge keys add` takes.
type addFlags struct {
	partner, brand, mode, properties, scopes, expires, clientID string
	scope                                                       []string // --scope, each added to --scopes
	rate                                                        float64
	burst                                                       int
}

func (a *addFlags) define(fs *flag.FlagSet, getenv func(string) (string, bool)) {
	brand, _ := getenv("EDGE_BRAND")
	fs.StringVar(&a.partner, "partner", "", "the partner holding the key")
	fs.StringVar(&a.brand, "brand", brand, "brand of the key (default EDGE_BRAND)")
	fs.StringVar(&a.mode, "mode", "", "live or test (the key's prefix follows it)")
	fs.StringVar(&a.properties, "properties", "*", "comma-separated property ids, or * for every property")
	fs.StringVar(&a.scopes, "scopes", ScopePropertiesRead, "comma-separated scopes")
	fs.Func("scope", "a scope added to --scopes (repeatable): webhooks:manage", func(v string) error {
		if strings.TrimSpace(v) == "" || strings.ContainsAny(v, ", \t") {
			return errors.New("one scope name, without spaces or commas")
		}
		a.scope = append(a.scope, v)
		return nil
	})
	fs.StringVar(&a.expires, "expires", "", "RFC 3339 time or a duration from now (720h); default never")
	fs.Float64Var(&a.rate, "rate-limit", 0, "the key's own requests per second (default: the deployment's quota)")
	fs.IntVar(&a.burst, "burst", 0, "requests at once under --rate-limit (default: the rate rounded up)")
	fs.StringVar(&a.clientID, "client-id", "", "OAuth 2.0 client whose access tokens act as this record")
}

func (a *addFlags) newKey(fs *flag.FlagSet, now time.Time) (NewKey, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if a.mode != string(ModeLive) && a.mode != string(ModeTest) {
		return NewKey{}, errors.New(`--mode must be "live" or "test"`)
	}
	if strings.TrimSpace(a.brand) == "" {
		return NewKey{}, errors.New("--brand is required (or EDGE_BRAND)")
	}
	k := NewKey{Partner: a.partner, Brand: a.brand, Mode: Mode(a.mode),
		Properties: SplitList(a.properties), ClientID: a.clientID}
	if set["scopes"] || set["scope"] {
		k.Scopes = SplitList(a.scopes) // --scopes "": no scope at all, as asked
		for _, sc := range a.scope {
			if !slices.Contains(k.Scopes, sc) {
				k.Scopes = append(k.Scopes, sc)
			}
		}
	}
	if a.expires != "" {
		t, err := ParseExpiry(a.expires, now)
		if err != nil {
			return NewKey{}, fmt.Errorf("--expires: %w", err)
		}
		k.ExpiresAt = &t
	}
	switch {
	case set["burst"] && !set["rate-limit"]:
		return NewKey{}, errors.New("--burst needs --rate-limit")
	case set["rate-limit"]:
		if !(a.rate > 0) || math.IsInf(a.rate, 0) {
			return NewKey{}, errors.New("--rate-limit must be a positive number of requests a second")
		}
		burst := a.burst
		if !set["burst"] && a.rate < 1e6 {
			burst = int(math.Ceil(a.rate))
		}
		k.RateLimit = &RateLimit{PerSecond: a.rate, Burst: burst}
	}
	return k, nil
}

// printKey prints a new key: once, to stdout; the warning goes to stderr.
func printKey(stdout, stderr io.Writer, asJSON bool, token, id string) error {
	var err error
	if asJSON {
		err = json.NewEncoder(stdout).Encode(struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		}{id, token})
	} else {
		_, err = fmt.Fprintf(stdout, "id:  %s\nkey: %s\n", id, token)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "warning: the key is shown only this once; the key file keeps only its SHA-256")
	return nil
}

func printList(w io.Writer, asJSON bool, list []Entry) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tMODE\tBRAND\tPARTNER\tEXPIRES\tSCOPES\tRATE\tCLIENT\tPROPERTIES")
	for _, e := range list {
		status, expires := e.Status, "never"
		if e.ExpiresAt != nil {
			expires = e.ExpiresAt.Format(time.RFC3339)
		}
		if e.Expired {
			status += " (expired)"
		}
		scopes := "all"
		if e.Scopes != nil {
			scopes = strings.Join(e.Scopes, ",")
		}
		rate := "default"
		if e.RateLimit != nil {
			rate = strconv.FormatFloat(e.RateLimit.PerSecond, 'g', -1, 64) + "/s burst " + strconv.Itoa(e.RateLimit.Burst)
		}
		if !e.APIKey {
			status += " (tokens only)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, status, e.Mode, e.Brand,
			cmp.Or(e.Partner, "-"), expires, cmp.Or(scopes, "-"), rate, cmp.Or(e.ClientID, "-"), strings.Join(e.Properties, ","))
	}
	return tw.Flush()
}

// parseInterleaved parses flags anywhere among args (the flag package
// stops at the first non-flag) and returns the other arguments in order.
// Everything after "--" is taken as arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
