package pmscheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Command is one run of `edge pms check` (docs/contract.md section 14)
// once its settings are read.
type Command struct {
	Config   Config
	JSON     bool   // the machine report instead of the human one
	Save     string // write the partner-visible result here; empty: not saved
	Baseline string // compare with a result saved by Save; empty: none
	// LimitMemory sets a soft memory limit for the walk (LimitMemory);
	// false when the operator set GOMEMLIMIT, which wins.
	LimitMemory bool
}

// UsageError is a check that cannot be run as asked (a baseline that
// cannot be read, a configuration Run refuses): the program exits with
// status 2 for it, 1 for a PMS that breaks the contract.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Execute walks and checks the PMS (Run), compares with the baseline,
// writes the report to stdout and saves the result. It returns nil when
// the PMS keeps the contract and no baseline property is lost, a
// *UsageError when the check cannot run as asked, another error otherwise.
func (c Command) Execute(ctx context.Context, stdout io.Writer) error {
	var base *Result
	if c.Baseline != "" {
		f, err := os.Open(c.Baseline)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--baseline: %w", err)}
		}
		base, err = LoadResult(f)
		f.Close()
		if err != nil {
			return &UsageError{Err: fmt.Errorf("--baseline %s: %w", c.Baseline, err)}
		}
	}
	if c.LimitMemory {
		defer LimitMemory(c.Config.Client.MaxWalkBytes)()
	}
	rep, err := Run(ctx, c.Config)
	if err != nil {
		return &UsageError{Err: err}
	}
	if base != nil && rep.Result != nil { // partners losing a property of base fail the check
		d := Compare(base, rep.Result)
		rep.Baseline, rep.OK = &BaselineDiff{File: c.Baseline, Diff: d}, rep.OK && !d.Breaking()
	}
	write := rep.WriteText
	if c.JSON {
		write = rep.WriteJSON
	}
	if err := write(stdout); err != nil {
		return err
	}
	if c.Save != "" {
		if rep.Result == nil {
			return errors.New("pms check: the walk failed, nothing saved to " + c.Save)
		}
		if err := rep.Result.SaveFile(c.Save); err != nil {
			return fmt.Errorf("--save: %w", err)
		}
	}
	if !rep.OK {
		return errors.New("pms check failed: " + strings.Join(rep.Failures(), "; "))
	}
	return nil
}
