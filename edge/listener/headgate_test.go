package listener_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/edge/listener/listenertest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// oversized is a request head of about 16 KB: past the head gate's 8 KB.
func oversized(path string) string {
	return "GET " + path + "?" + strings.Repeat("pad=1&", 16<<10/6) + " HTTP/1.1\r\nHost: edge\r\n\r\n"
}

// answerAsync reads one answer from c in a goroutine.
func answerAsync(c net.Conn) <-chan *http.Response {
	ch := make(chan *http.Response, 1)
	go func() {
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			ch <- nil
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		ch <- res
	}()
	return ch
}

// Oversized request heads are read a few at a time (as many as
// GOMAXPROCS): while stalled oversized heads hold every slot, another
// oversized head waits, a normal request is served at once, and the
// stalled heads give their slots up when ReadHeaderTimeout cuts them off.
func TestOversizedHeadsTakeTurns(t *testing.T) {
	const rht = 4 * time.Second // the stalled heads hold their slots past the checks, on a loaded machine too
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var held func() int // the head gate's slots held
	addr, _ := listenertest.Serve(t, ctx, listener.WithHeadSlots(listener.ServeConfig{
		Handler:           edge.NewServer(edge.Config{Brand: testBrand, Now: testkit.From(testkit.Epoch)}, emptyStore(t, false), nil, nil),
		ReadHeaderTimeout: rht,
	}, &held))
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	stalled := make([]<-chan *http.Response, runtime.GOMAXPROCS(0))
	begun := time.Now()
	for i := range stalled {
		c := dial()
		head := oversized("/v1/health")
		if _, err := io.WriteString(c, head[:len(head)-len(" HTTP/1.1\r\nHost: edge\r\n\r\n")]); err != nil {
			t.Fatal(err)
		}
		stalled[i] = answerAsync(c)
	}
	// The server's connection goroutines read the stalled heads and take
	// every slot (on a loaded machine, later); they are cut off at rht.
	testkit.Eventually(t, "the stalled heads hold every slot", func() bool { return held() == len(stalled) })
	// The scenario, not a wait for an event: the next oversized head comes
	// midway through the stalled heads' header timeout, so that the checks
	// below run before they are cut off and its own timeout ends rht/2
	// after theirs (time to take a freed slot and read its head).
	time.Sleep(time.Until(begun.Add(rht / 2)))
	start := time.Now()
	big := dial()
	if _, err := io.WriteString(big, oversized("/v1/health")); err != nil {
		t.Fatal(err)
	}
	bigAnswer := answerAsync(big)

	if code, body := testkit.Get(t, "http://"+addr+"/v1/health"); code != http.StatusOK {
		t.Fatalf("a normal request while the slots are held: %d %s", code, body)
	}
	select {
	case <-bigAnswer:
		t.Fatalf("an oversized head was answered after %v, while stalled ones held every slot", time.Since(start))
	case <-time.After(200 * time.Millisecond):
	}
	for _, ch := range stalled {
		if res := <-ch; res != nil && res.StatusCode < 400 {
			t.Errorf("a stalled head was answered %d", res.StatusCode)
		}
	}
	select {
	case res := <-bigAnswer:
		if res == nil || res.StatusCode != http.StatusOK {
			t.Fatalf("the waiting oversized head, once the stalled ones were cut off: %v", res)
		}
	case <-time.After(rht + 5*time.Second):
		t.Fatal("the waiting oversized head was never answered")
	}
}

// A slot bounds reading a head, not the answer: handlers that take their
// time (a slow PMS) do not hold one, here over TLS and HTTP/1.1.
func TestHandlersHoldNoHeadSlot(t *testing.T) {
	certFile, keyFile, pool := makeCert(t)
	slots := runtime.GOMAXPROCS(0)
	entered, release := make(chan struct{}, slots), make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, _ := listenertest.Serve(t, ctx, listener.ServeConfig{Handler: h, TLSCertFile: certFile, TLSKeyFile: keyFile})
	dial := func() net.Conn {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for range slots {
		if _, err := io.WriteString(dial(), oversized("/slow")); err != nil {
			t.Fatal(err)
		}
	}
	for range slots {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow oversized requests never reached their handler")
		}
	}
	c := dial()
	if _, err := io.WriteString(c, oversized("/fast")); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-answerAsync(c):
		if res == nil || res.StatusCode != http.StatusNoContent {
			t.Fatalf("an oversized head while handlers ran: %v", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an oversized head waited for handlers that had read theirs")
	}
}
