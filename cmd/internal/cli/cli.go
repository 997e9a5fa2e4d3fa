// Package cli is the one main of the module's programs: a context that
// ends on SIGINT or SIGTERM, the program's run, and its exit status.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// ExitCoder is an error that ends the program with a status of its own;
// every other error ends it with 1.
type ExitCoder interface {
	error
	ExitCode() int
}

// Main runs run with a context that ends on SIGINT or SIGTERM; an error is
// printed to stderr after the program's name and ends the process with
// status 1, or with its ExitCode.
func Main(name string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, name+":", err)
	code := 1
	var ec ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	os.Exit(code)
}
