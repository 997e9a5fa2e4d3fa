package listener_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/edge/listener/listenertest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// docs/contract.md section 10: 100 slowloris clients, each trickling header
// lines that never end, are cut off by ReadHeaderTimeout, while a normal
// client is served meanwhile.
func TestSlowlorisCutOff(t *testing.T) {
	const (
		clients = 100
		rht     = 500 * time.Millisecond
		trickle = 100 * time.Millisecond
		lines   = 100 // 10 s of trickling if nobody cuts it short
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := listenertest.Serve(t, ctx, listener.ServeConfig{
		Handler:           edge.NewServer(edge.Config{Brand: testBrand, Now: testkit.From(testkit.Epoch)}, emptyStore(t, false), nil, nil),
		ReadHeaderTimeout: rht,
	})

	var wg sync.WaitGroup
	connected := make(chan struct{}, clients)
	outcome := make(chan string, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				outcome <- "dial: " + err.Error()
				connected <- struct{}{}
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(lines * trickle))
			_, _ = fmt.Fprintf(conn, "GET /v1/health HTTP/1.1\r\nHost: edge\r\n")
			connected <- struct{}{}
			cut := make(chan struct{})
			go func() { // trickle until the server hangs up
				defer close(cut)
				for n := range lines {
					if _, err := fmt.Fprintf(conn, "X-Slow-%d-%d: y\r\n", i, n); err != nil {
						return
					}
					time.Sleep(trickle) // the slow client's own pace (the outside event), not a timer of the edge
				}
			}()
			b, err := io.ReadAll(conn) // ends when the server closes
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				outcome <- "still open after the whole trickle"
			} else if strings.Contains(string(b), " 200 ") {
				outcome <- "served: " + string(b)
			} else {
				outcome <- ""
			}
			_ = conn.Close()
			<-cut
		}()
	}
	for range clients {
		<-connected
	}
	// Meanwhile, a normal client is served.
	if code, body := testkit.Get(t, "http://"+addr+"/v1/health"); code != 200 {
		t.Errorf("normal client among the slowloris: %d %s", code, body)
	}
	wg.Wait()
	close(outcome)
	for o := range outcome {
		if o != "" {
			t.Errorf("slowloris client: %s", o)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// docs/contract.md section 10: 2 MiB of request headers answer 431 (the server's
// MaxHeaderBytes), and nothing reaches the handler.
func TestHugeHeaders431(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reached := false
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mu.Lock(); reached = true; mu.Unlock() })
	addr, done := listenertest.Serve(t, ctx, listener.ServeConfig{Handler: h})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { // the server may hang up before all is sent
		w := bufio.NewWriter(conn)
		_, _ = w.WriteString("GET /v1/health HTTP/1.1\r\nHost: edge\r\n")
		line := "X-Big: " + strings.Repeat("a", 1016) + "\r\n" // 1 KiB a line
		for range 2048 {
			if _, err := w.WriteString(line); err != nil {
				return
			}
		}
		_, _ = w.WriteString("\r\n")
		_ = w.Flush()
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to 2 MiB of headers: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("2 MiB of headers: %d, want 431", res.StatusCode)
	}
	mu.Lock()
	if reached {
		t.Errorf("the handler saw the request")
	}
	mu.Unlock()
	cancel()
	<-done
}
