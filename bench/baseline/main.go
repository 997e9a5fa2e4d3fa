// Command baseline is the floor of bench/run and bench/load.sh: a bare
// net/http server answering with fixed bytes and the headers the edge sends
// on a cached answer. It reads the body to serve from the file named by
// --body (the scripts write there what the edge answered), so both servers
// write the same number of bytes; --route PATH=FILE (repeatable) answers
// another body for one exact path (the query is ignored).
//
// With --proxy URL it is instead the floor of a Go proxy, for the miss row:
// every request is forwarded to URL (the same path) through net/http's
// client, and the answer's body is written back with the same fixed
// headers. No decoding, retries, breaker, telemetry or checks: what any
// proxy built on net/http's server and client costs at least.
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
	"strings"
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
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:18081", "listen address (loopback)")
	bodyFile := fs.String("body", "", "file holding the body to answer (required without --proxy)")
	proxy := fs.String("proxy", "", "forward every request to this base URL instead (the floor of a Go proxy)")
	routes := map[string][]byte{}
	fs.Func("route", "PATH=FILE: answer the body in FILE for this exact path (repeatable)", func(v string) error {
		path, file, ok := strings.Cut(v, "=")
		if !ok || !strings.HasPrefix(path, "/") {
			return fmt.Errorf("want PATH=FILE, got %q", v)
		}
		b, err := os.ReadFile(file)
		routes[path] = b
		return err
	})
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var h http.Handler
	if *proxy != "" {
		h = forward(strings.TrimRight(*proxy, "/"))
		fmt.Fprintf(stdout, "baseline listening on %s, forwarding to %s\n", *addr, *proxy)
	} else {
		body, err := os.ReadFile(*bodyFile)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/", fixed(body))
		for path, b := range routes {
			mux.Handle("GET "+path, fixed(b))
		}
		h = mux
		fmt.Fprintf(stdout, "baseline listening on %s, %d bytes per answer, %d other routes\n", *addr, len(body), len(routes))
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
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

// fixed answers body with the headers the edge sends on a cached answer
// (the request id of the same length as the edge's), their values
// allocated once; net/http adds Date as it does for the edge.
func fixed(body []byte) http.Handler {
	hs := map[string][]string{
		"Content-Type":           {"application/json"},
		"Content-Length":         {strconv.Itoa(len(body))},
		"Cache-Control":          {"no-store"},
		"X-Content-Type-Options": {"nosniff"},
		"Svc-Request-Id":         {"req_BASELINEBASELINEBASELINE"},
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

// forward answers each request with the body base answers for its path,
// fetched through net/http's client with the edge's pool settings
// (pms.NewTransport), bodies bounded at 1 MiB. A failed fetch is a
// 502.
func forward(base string) http.Handler {
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 128, IdleConnTimeout: 90 * time.Second,
	}}
	ct, cc, nosniff := []string{"application/json"}, []string{"no-store"}, []string{"nosniff"}
	rid := []string{"req_BASELINEBASELINEBASELINE"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, base+r.URL.RequestURI(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		h := w.Header()
		h["Content-Type"], h["Cache-Control"], h["X-Content-Type-Options"], h["Svc-Request-Id"] = ct, cc, nosniff, rid
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(body)
	})
}
