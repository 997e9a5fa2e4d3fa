// Command otlpsink is the OTLP/HTTP collector of bench/run: it accepts every
// export (traces, metrics, logs), reads and discards the body, and answers
// 200 with an empty protobuf message, so that the edge runs with its
// exporter configured as deployed without a real collector. On exit it
// prints how many exports it received per path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"
)

// main is the six lines cmd/internal/cli.Main gives the shipped programs,
// written out: bench may not import cmd/internal (Go's internal rule), and
// a benchmark tool stays free of the programs' plumbing.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4318", "listen address (port 0 picks a free port)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	s := &sink{counts: map[string]int{}}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "otlpsink listening on http://%s\n", ln.Addr())
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
	s.report(stdout)
	return nil
}

// sink counts exports per path. The paths are the OTLP ones, but a client
// could send any: only the first maxPaths distinct paths get a counter.
type sink struct {
	mu     sync.Mutex
	counts map[string]int
}

const maxPaths = 16

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	if _, ok := s.counts[r.URL.Path]; ok || len(s.counts) < maxPaths {
		s.counts[r.URL.Path]++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty body is an empty Export*ServiceResponse
}

func (s *sink) report(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range slices.Sorted(maps.Keys(s.counts)) {
		fmt.Fprintf(w, "exports %s %d\n", p, s.counts[p])
	}
}
