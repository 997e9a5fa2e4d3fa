// Command edge is the partner-edge proxy: the Hospitality Partner API v1 in
// front of the PMS. With no settings it runs the demo (see README.md).
package main

import (
	"context"
	"os"

	"github.com/partner-edge/partner-edge/cmd/internal/cli"
)

func main() {
	cli.Main("edge", func(ctx context.Context) error { // exitError: its own status
		// A variable the edge does not read stops every command before it
		// starts (checkEnviron): run sees the environment only by lookup.
		if err := checkEnviron(os.Environ()); err != nil {
			return err
		}
		return run(ctx, os.Args, os.LookupEnv, os.Stdout, os.Stderr)
	})
}
