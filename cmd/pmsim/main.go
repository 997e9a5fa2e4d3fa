// Command pmsim serves the simulated internal PMS API (docs/pms-api.md)
// on its own, for load tests and demos, with seeded data and optional faults.
// Run "pmsim --help" for the flags.
package main

import (
	"context"
	"os"

	"github.com/partner-edge/partner-edge/cmd/internal/cli"
)

func main() {
	cli.Main("pmsim", func(ctx context.Context) error {
		return run(ctx, os.Args, os.LookupEnv, os.Stdout, os.Stderr)
	})
}
