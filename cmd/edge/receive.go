package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// receiveUsage is edge webhooks receive's first line of help.
const receiveUsage = "usage: edge webhooks receive --secret whsec_... [--addr 127.0.0.1:8090]"

// maxReceived bounds the body a receiver reads: an event is a property,
// a few KiB.
const maxReceived = 1 << 20

// runWebhooksCmd is "edge webhooks receive": a receiver of deliveries for
// trying webhooks (docs/webhooks.md), which verifies each request with the
// Standard Webhooks reference library (not our own signer's code), answers
// 204 to a verified delivery and 400 to any other, and prints one line per
// event on stdout: webhook-id, type, property id. It listens until ctx
// ends (Ctrl-C).
func runWebhooksCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "receive" {
		return usageError(receiveUsage)
	}
	fs := flag.NewFlagSet("edge webhooks receive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8090", "address to listen on (port 0: any free port, printed)")
	secret := fs.String("secret", "", "the endpoint's secret (whsec_...), as the edge answered its creation")
	fs.Usage = func() { fmt.Fprintln(stderr, receiveUsage); fs.PrintDefaults() }
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	if fs.NArg() > 0 || *secret == "" {
		return usageError(receiveUsage)
	}
	wh, err := standardwebhooks.NewWebhook(*secret)
	if err != nil {
		return usageError("--secret: not a webhook secret (whsec_ and base64): %v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr: cannot listen on %s: %w", *addr, err)
	}
	fmt.Fprintf(stderr, "receiving webhooks on http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	srv := &http.Server{Handler: receiver(wh, stdout, stderr), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-done
	return nil
}

// receiver verifies and prints each delivery, one line per event on out
// (the lines never interleave); refusals are told on errOut.
func receiver(wh *standardwebhooks.Webhook, out, errOut io.Writer) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReceived))
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err == nil {
			err = json.Unmarshal(body, &ev)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			fmt.Fprintf(errOut, "refused a delivery (webhook-id %q): %v\n", r.Header.Get("webhook-id"), err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fmt.Fprintf(out, "%s %s %s\n", r.Header.Get("webhook-id"), ev.Type, ev.Data.ID)
		w.WriteHeader(http.StatusNoContent)
	})
}
