// Command edge is the partner-edge proxy: the Hospitality Partner API v1 in
// front of the PMS. With no settings it runs the demo (see README.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.LookupEnv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		code := 1
		var ee *exitError // edge pms check: 2 for usage errors
		if errors.As(err, &ee) {
			code = ee.code
		}
		os.Exit(code)
	}
}
