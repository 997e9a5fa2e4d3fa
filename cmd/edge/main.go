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
		return run(ctx, os.Args, os.LookupEnv, os.Stdout, os.Stderr)
	})
}
