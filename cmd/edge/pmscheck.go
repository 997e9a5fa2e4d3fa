package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/cmd/internal/settingval"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/pmscheck"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// exitError ends the program with a status of its own (main uses 1 for
// every other error): 2 for usage errors of edge pms check.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code } // cli.ExitCoder

func usageError(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}

// checkOptions are edge pms check's settings and flags.
type checkOptions struct {
	cmd                pmscheck.Command // what runs
	sandbox, candidate bool
	brandDefaulted     bool // EDGE_BRAND unset: the demo's brand
}

// runPMSCheck is edge pms check (docs/contract.md section 14, its usage
// below): nil (0) when the PMS keeps docs/pms-api.md and no baseline
// property is lost, an error (1) otherwise, usage errors *exitError (2).
// With no PMS_BASE_URL it checks the demo's embedded simulator, as the
// demo does.
func runPMSCheck(ctx context.Context, args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	o, err := parseCheck(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if o.cmd.Config.Client.BaseURL == "" {
		data := pmsim.DemoLive
		if o.sandbox {
			data = pmsim.DemoSandbox
		}
		url, stop, err := pmsim.ServeLoopback(pmsim.New(data))
		if err != nil {
			return err
		}
		defer stop()
		o.cmd.Config.Client.BaseURL = url
		fmt.Fprintf(stderr, "edge pms check: no PMS_BASE_URL: checking the demo's embedded simulator at %s\n", url)
	}
	if o.brandDefaulted {
		fmt.Fprintln(stderr, "edge pms check: EDGE_BRAND unset: checking brand "+pmsim.DemoBrand+" (the demo's)")
	}
	_, memLimitSet := getenv("GOMEMLIMIT") // the operator's limit wins
	o.cmd.LimitMemory = !memLimitSet
	err = o.cmd.Execute(ctx, stdout)
	var ue *pmscheck.UsageError
	if errors.As(err, &ue) {
		return &exitError{code: 2, err: ue.Err}
	}
	return err
}

// checkLine is edge pms check's command line: the edge's settings it
// reads (the same PMS, brand, code source and client deadlines as the edge
// itself) and the check's own flags.
func checkLine(o *checkOptions) settingval.Line {
	c := &o.cmd
	return settingval.Line{Name: "edge pms check", Settings: []string{"EDGE_BRAND", "EDGE_CODE_SOURCE", "PMS_BASE_URL",
		"PMS_SANDBOX_URL", "PMS_TOKEN", "PMS_CANDIDATE_URL", "PMS_CANDIDATE_TOKEN", "EDGE_PMS_TIMEOUT",
		"EDGE_PMS_ATTEMPT_TIMEOUT", "EDGE_PMS_WALK_TIMEOUT", "EDGE_PMS_MAX_WALK_BYTES", "PMS_CANDIDATE_MAX_WALK_BYTES"}, Usage: []string{
		"usage: edge pms check [--json] [--save FILE] [--baseline FILE] [--sandbox | --candidate]",
		"\nWalks the PMS with the edge's own client, checks every answer against",
		"docs/pms-api.md, maps every record and reports what partners would see.",
		"Exit status: 0 OK; 1 an answer breaks docs/pms-api.md, or a baseline",
		"property is gone or now rejected; 2 usage error. With no PMS_BASE_URL the",
		"demo's embedded simulator is checked. See docs/pms-changes.md.",
	}, Flags: func(fs *flag.FlagSet) {
		fs.BoolVar(&c.JSON, "json", false, "print the machine report (JSON) instead of the human one")
		fs.StringVar(&c.Save, "save", "", "write the partner-visible result to this file (a later --baseline)")
		fs.StringVar(&c.Baseline, "baseline", "", "compare with a result saved by --save: properties added, removed, changed")
		fs.BoolVar(&o.sandbox, "sandbox", false, "check PMS_SANDBOX_URL (test mode) instead of PMS_BASE_URL")
		fs.BoolVar(&o.candidate, "candidate", false, "check PMS_CANDIDATE_URL with PMS_CANDIDATE_TOKEN instead of PMS_BASE_URL")
		fs.IntVar(&c.Config.Gets, "gets", pmscheck.DefaultGets, "listed properties also read on the get route (plus one unknown id); 0: none")
		fs.IntVar(&c.Config.Client.PageSize, "page-size", pms.DefaultPageSize, "list page size asked of the PMS, 1..500 (the edge asks 500)")
	}}
}

// parseCheck resolves the check's settings: the edge's own (environment,
// overridden by a flag of the same name, through the edge's parser) and
// the check's flags.
func parseCheck(args []string, getenv lookupEnv, stderr io.Writer) (checkOptions, error) {
	var o checkOptions
	p, rest, err := checkLine(&o).Parse(settingTable(), args, getenv, stderr)
	if err != nil {
		return o, err
	}
	if err := settingval.NoArgs(rest); err != nil {
		return o, err
	}
	c, cl := &o.cmd.Config, &o.cmd.Config.Client
	c.Brand, c.CodeSource = p.Str("EDGE_BRAND"), settingval.Read(p, "EDGE_CODE_SOURCE", mapping.ParseCodeSource)
	cl.CallTimeout = settingval.Read(p, "EDGE_PMS_TIMEOUT", settingval.Duration)
	cl.AttemptTimeout = settingval.Read(p, "EDGE_PMS_ATTEMPT_TIMEOUT", settingval.Duration)
	cl.WalkTimeout = settingval.Read(p, "EDGE_PMS_WALK_TIMEOUT", settingval.Duration)
	cl.MaxWalkBytes = settingval.Read(p, "EDGE_PMS_MAX_WALK_BYTES", settingval.Size)
	cl.Token, cl.Version = p.Str("PMS_TOKEN"), buildVersion()
	o.choosePMS(p)
	if c.Brand == "" {
		// The demo's brand. Unlike the edge, the check does not refuse to
		// start without EDGE_BRAND: it names the brand it checked in its
		// report, and a brand the PMS does not know lists as empty.
		c.Brand, o.brandDefaulted = pmsim.DemoBrand, true
	}
	if cl.PageSize < 1 || cl.PageSize > 500 {
		p.Fail(fmt.Errorf("--page-size %d: want 1..500", cl.PageSize))
	}
	if c.Gets < 0 {
		p.Fail(fmt.Errorf("--gets %d: want 0 or more", c.Gets))
	}
	if c.Gets == 0 {
		c.Gets = -1 // pmscheck: negative means none
	}
	if cl.CallTimeout <= 0 || cl.AttemptTimeout <= 0 || cl.WalkTimeout <= 0 {
		p.Fail(errors.New("EDGE_PMS_TIMEOUT, EDGE_PMS_ATTEMPT_TIMEOUT and EDGE_PMS_WALK_TIMEOUT must be positive"))
	}
	return o, p.Err()
}

// choosePMS sets the PMS checked and its mode: PMS_BASE_URL (live), or
// with --sandbox PMS_SANDBOX_URL (test), or with --candidate
// PMS_CANDIDATE_URL with its token and bound (candidate).
func (o *checkOptions) choosePMS(p *settingval.Parser) {
	live := settingval.Read(p, "PMS_BASE_URL", settingval.URL)
	sandbox := settingval.Read(p, "PMS_SANDBOX_URL", settingval.URL)
	candidate := settingval.Read(p, "PMS_CANDIDATE_URL", settingval.URL)
	c := &o.cmd.Config
	c.Client.BaseURL, c.Mode = live, "live"
	switch {
	case o.sandbox && o.candidate:
		p.Fail(errors.New("--sandbox and --candidate: choose one"))
	case o.sandbox && live != "" && sandbox == "":
		p.Fail(errors.New("--sandbox needs PMS_SANDBOX_URL"))
	case o.sandbox:
		c.Client.BaseURL, c.Mode = sandbox, "test"
	case o.candidate && candidate == "":
		p.Fail(errors.New("--candidate needs PMS_CANDIDATE_URL"))
	case o.candidate:
		c.Client.BaseURL, c.Client.Token, c.Mode = candidate, p.Str("PMS_CANDIDATE_TOKEN"), "candidate"
		c.Client.MaxWalkBytes = settingval.Read(p, "PMS_CANDIDATE_MAX_WALK_BYTES", settingval.Size)
	}
}
