package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// docs/webhooks.md, "No delivery reaches inside", through the built
// binary. DNS rebinding (a name answering an inside address at a later
// attempt) needs a resolver the test controls: webhooks_rebind_test.go.

// acceptCounter is a TCP listener that counts the connections it accepts
// and closes them.
type acceptCounter struct {
	addr     *net.TCPAddr
	accepted atomic.Int64
}

func listenCounting(t *testing.T, addr string) (*acceptCounter, error) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &acceptCounter{addr: ln.Addr().(*net.TCPAddr)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return c, nil
}

// attempts is the edge's partner_edge_webhooks_attempts_total of each
// outcome (absent: 0), read from its admin listener.
func attempts(t *testing.T, admin string) map[webhooks.Outcome]float64 {
	t.Helper()
	body := scrape(t, admin+"/metrics")
	out := map[webhooks.Outcome]float64{}
	for _, o := range webhooks.Outcomes {
		out[o], _ = value(body, `partner_edge_webhooks_attempts_total{outcome="`+string(o)+`"}`)
	}
	return out
}

// total is the count of attempts of every outcome.
func total(counts map[webhooks.Outcome]float64) float64 {
	var n float64
	for _, c := range counts {
		n += c
	}
	return n
}

// startHookEdge starts one edge on pms with key k, EDGE_DATA_DIR, an admin listener and
// extra settings, its log shown when t fails.
func startHookEdge(t *testing.T, pms *feedPMS, k feedKeys, extra ...string) *edgeProc {
	t.Helper()
	return startHookEdgeCmd(t, exec.Command(buildEdge(t)), pms, k, extra...)
}

// startHookEdgeCmd is startHookEdge running cmd (startMemberCmd).
func startHookEdgeCmd(t *testing.T, cmd *exec.Cmd, pms *feedPMS, k feedKeys, extra ...string) *edgeProc {
	t.Helper()
	e := startMemberCmd(t, cmd, feedEdgeEnv(pms, k, append([]string{"EDGE_ADMIN_ADDR=127.0.0.1:0", "EDGE_DATA_DIR=" + t.TempDir()}, extra...)...))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("edge log:\n%s", e.stderr.String())
		}
	})
	return e
}

// With no EDGE_WEBHOOK_ALLOW_CIDRS (the default), endpoints naming
// loopback, private, link-local (cloud metadata), CGNAT and unique local
// addresses, an IPv4-mapped loopback and a name resolving to loopback are
// taken at creation (the address is checked when connecting, not in the
// URL) and never connected to: each attempt (the first and the retry 5 s
// later, ten endpoints) counts as address_refused, no other outcome is
// counted, and the listeners on loopback accept nothing. A receiver on an
// allowed loopback address answering a redirect (307, then 302) to
// another listener: the redirect is not followed (that listener sees no
// connection) and each answer is a failed attempt, counted redirect, the
// same webhook-id tried again after 5 s. DNS rebinding: testRebinding.
func TestWebhooksNeverReachInsideThroughTheBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and waits for a retry")
	}
	t.Run("inside addresses", func(t *testing.T) {
		t.Parallel()
		v4, err := listenCounting(t, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(v4.addr.Port)
		v6, err := listenCounting(t, "[::1]:0")
		port6 := port
		if err == nil {
			port6 = strconv.Itoa(v6.addr.Port)
		} else {
			t.Logf("no listener on [::1] (%v): that endpoint's port is the IPv4 one's", err)
		}
		k := hookKey(t)
		e := startHookEdge(t, churningPMS(t), k)
		p := partner{e.base, k.live}
		urls := []string{
			"https://127.0.0.1:" + port + "/hooks",
			"https://10.0.0.1:" + port + "/hooks",
			"https://172.16.0.1:" + port + "/hooks",
			"https://192.168.1.1:" + port + "/hooks",
			"https://169.254.169.254/latest/meta-data/",
			"https://100.64.0.1:" + port + "/hooks",
			"https://[fd00::1]:" + port + "/hooks",
			"https://[::ffff:127.0.0.1]:" + port + "/hooks",
			"https://[::1]:" + port6 + "/hooks",
			"https://localhost:" + port + "/hooks",
		}
		for _, u := range urls {
			p.createHook(t, u) // no address is judged at creation: a name's addresses change
		}
		want := float64(2 * len(urls)) // the first attempt and the retry after 5 s; the next is 5 min later
		testkit.Eventually(t, "every endpoint's first attempt and its retry made", func() bool {
			return total(attempts(t, e.admin)) >= want
		})
		for o, n := range attempts(t, e.admin) {
			if o == webhooks.FailedRefused && n != want || o != webhooks.FailedRefused && n != 0 {
				t.Errorf("%s attempts: %v; want %v address_refused and no other", o, n, want)
			}
		}
		if n := v4.accepted.Load(); n != 0 {
			t.Errorf("the listener on 127.0.0.1 accepted %d connections", n)
		}
		if v6 != nil && v6.accepted.Load() != 0 {
			t.Errorf("the listener on [::1] accepted %d connections", v6.accepted.Load())
		}
		hs := p.listHooks(t)
		if len(hs) != len(urls) {
			t.Fatalf("%d endpoints listed; want %d", len(hs), len(urls))
		}
		for _, h := range hs {
			if h.Status != "enabled" { // disabled after the eighth attempt only, about 28 hours on
				t.Errorf("%s is %s (%v) after two attempts", h.URL, h.Status, h.DisabledReason)
			}
		}
	})

	t.Run("DNS rebinding", testRebinding)

	t.Run("redirect", func(t *testing.T) {
		t.Parallel()
		elsewhere, err := listenCounting(t, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var ids []string
		var at []time.Time
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			ids, at = append(ids, r.Header.Get("webhook-id")), append(at, time.Now())
			status := http.StatusTemporaryRedirect // a 307 keeps the POST and its body: followed, it would hand them on
			if len(ids) > 1 {
				status = http.StatusFound
			}
			mu.Unlock()
			w.Header().Set("Location", "http://"+elsewhere.addr.String()+"/stolen")
			w.WriteHeader(status)
		}))
		t.Cleanup(rcv.Close)
		k := hookKey(t)
		e := startHookEdge(t, churningPMS(t), k, "EDGE_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8", "EDGE_WEBHOOK_ALLOW_HTTP=true")
		partner{e.base, k.live}.createHook(t, rcv.URL+"/hooks")
		testkit.Eventually(t, "a failed attempt and its retry counted", func() bool {
			return total(attempts(t, e.admin)) >= 2
		})
		for o, n := range attempts(t, e.admin) {
			if o == webhooks.FailedRedirect && n != 2 || o != webhooks.FailedRedirect && n != 0 {
				t.Errorf("%s attempts: %v; want 2 redirect and no other", o, n)
			}
		}
		if n := elsewhere.accepted.Load(); n != 0 {
			t.Errorf("the redirect's target accepted %d connections", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ids) != 2 || ids[0] != ids[1] || at[1].Sub(at[0]) < webhooks.Retries[0] {
			t.Errorf("the receiver got %v at %v; want one webhook-id twice, %s apart (a failed attempt and its retry)", ids, at, webhooks.Retries[0])
		}
	})
}
