// Command baseline is the floor of bench/load.sh: a bare net/http server
// answering every request with the same fixed bytes and headers, as the
// edge answers a cached list. It reads the body to serve from the file
// named by --body (bench/load.sh writes there what the edge answered), so
// both servers write the same number of bytes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:18081", "listen address (loopback)")
	bodyFile := fs.String("body", "", "file holding the body to answer (required)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *addr, Handler: fixed(body), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(stdout, "baseline listening on %s, %d bytes per answer\n", *addr, len(body))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// fixed answers body with as many headers as the edge sends on a cached
// list, their values allocated once.
func fixed(body []byte) http.Handler {
	hs := map[string][]string{
		"Content-Type":           {"application/json"},
		"Content-Length":         {strconv.Itoa(len(body))},
		"Cache-Control":          {"no-store"},
		"X-Content-Type-Options": {"nosniff"},
		"Svc-Request-Id":         {"req_BASELINEBASELINEBASELINE12"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		for k, v := range hs {
			h[k] = v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}
