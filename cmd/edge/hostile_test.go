package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// Acceptance (docs/contract.md section 21, item 10): a real edge with
// tokens on answers an expired token of a known client, whose signature
// verifies, 401 ACCESS_TOKEN_EXPIRED, and its access-log line names the
// client's record (key_id), as every identified refusal's does; an expired
// token of an unknown client names none.
func TestExpiredTokenNamedInAccessLog(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	const audience = "https://api.aurora.example.com/v1"
	signer := oauthtest.NewSigner(t, "e1", jose.ES256)
	issuer := oauthtest.NewIssuer(t, signer.JWK())
	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5}))
	t.Cleanup(sim.Close)
	_, apiRec := keystest.Mint(t, "aurora", keys.ModeLive)
	tokenRec := apiRec
	tokenRec.ID, tokenRec.SHA256, tokenRec.ClientID = "key_oauthOnly", "", "partner-a"
	keysFile := keystest.File(t, apiRec, tokenRec)

	p := startEdgeProc(t, buildEdge(t), []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + keysFile,
		"PMS_BASE_URL=" + sim.URL, "EDGE_DOCS_URL=" + testDocsURL, "EDGE_ACCESS_LOG=stderr",
		"EDGE_OAUTH_ISSUER=" + issuer.URL(), "EDGE_OAUTH_AUDIENCE=" + audience,
	})
	expired := func(client string) string {
		at := time.Now().Add(-time.Hour) // an hour ago, well past the 60 s of skew
		return signer.Sign(t, map[string]any{"iss": issuer.URL(), "aud": audience, "sub": client, "client_id": client,
			"iat": at.Unix(), "exp": at.Add(5 * time.Minute).Unix(), "scope": "properties:read"}, "at+jwt")
	}
	for _, tc := range []struct{ client, keyID string }{{"partner-a", "key_oauthOnly"}, {"partner-x", ""}} {
		res, body := getWithKey(t, "http://"+p.addr+"/v1/properties", expired(tc.client))
		if res.StatusCode != 401 || !strings.Contains(string(body), "ACCESS_TOKEN_EXPIRED") {
			t.Fatalf("%s: %d %s, want 401 ACCESS_TOKEN_EXPIRED", tc.client, res.StatusCode, body)
		}
		id := res.Header.Get("Svc-Request-Id")
		var line map[string]any
		testkit.Eventually(t, "the access-log line of the refusal is written", func() bool {
			for l := range strings.SplitSeq(p.stderr.String(), "\n") {
				if strings.Contains(l, id) && strings.Contains(l, `"status":401`) {
					return json.Unmarshal([]byte(l), &line) == nil
				}
			}
			return false
		})
		if got, has := line["key_id"]; tc.keyID == "" && has || tc.keyID != "" && got != tc.keyID {
			t.Errorf("%s: access line key_id %v (present %v), want %q: %v", tc.client, got, has, tc.keyID, line)
		}
	}
}

// slowProxy is a TCP proxy in front of a Redis that, while slow is set,
// holds the answer to every command but a connection's handshake (HELLO,
// AUTH, CLIENT, SELECT: a new connection still gets to send its command)
// for delay; it counts the quota commands (EVAL, EVALSHA) and the health
// probe's writes (pe:probe) that reach Redis.
type slowProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	slow   atomic.Bool
	evals  atomic.Int64
	probes atomic.Int64
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startSlowProxy(t *testing.T, target string, delay time.Duration) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: target, delay: delay}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *slowProxy) addr() string { return p.ln.Addr().String() }

func (p *slowProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		var held atomic.Bool // the answer under way is held
		p.wg.Add(2)
		go func() { // client to Redis: counted, at once
			defer p.wg.Done()
			defer s.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					chunk := bytes.ToLower(buf[:n])
					p.evals.Add(int64(bytes.Count(chunk, []byte("\r\nevalsha\r\n")) + bytes.Count(chunk, []byte("\r\neval\r\n"))))
					p.probes.Add(int64(bytes.Count(chunk, []byte("pe:probe"))))
					handshake := false
					for _, cmd := range []string{"hello", "auth", "client", "select"} {
						handshake = handshake || bytes.Contains(chunk, []byte("\r\n"+cmd+"\r\n"))
					}
					held.Store(p.slow.Load() && !handshake)
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // Redis to client: held while slow
			defer p.wg.Done()
			defer c.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					if held.Load() {
						time.Sleep(p.delay) // the fault under test: a slow Redis
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// Acceptance (docs/contract.md section 21, item 11): a real edge on a Redis
// that turns 300 ms slow opens its breaker, and from then on no quota call
// reaches Redis, not even as the breaker's half-open trial, which comes
// every 2 s: the trial is the background health probe's (it fails, logged,
// on the slow Redis), so a partner's request never waits on Redis, whatever
// the breaker's state. Once Redis
// is fast again the probe closes the breaker and quotas are shared again.
func TestSlowRedisNeverOnRequestPath(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary on a real Redis")
	}
	redisSrv := redistest.Start(t)
	proxy := startSlowProxy(t, redisSrv.Addr(), 300*time.Millisecond)
	limited, limitedRec := keystest.Mint(t, "aurora", keys.ModeLive)
	limitedRec.RateLimit = &keys.RateLimit{PerSecond: 1000, Burst: 1000} // consulted on every request, never refusing
	keyFile := keystest.File(t, limitedRec)
	pms := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5, Token: "pms-secret-token"}))
	t.Cleanup(pms.Close)
	edge := startFleetWith(t, buildEdge(t), 1, keyFile, pms.URL, "EDGE_REDIS_URL=redis://"+proxy.addr()+"/0")[0]

	// Partners' traffic, one request after another, from now to the end.
	var answers, slowest atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		hc := &http.Client{Timeout: 10 * time.Second}
		for {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest("GET", edge.base+"properties?perPage=1", nil)
			req.Header.Set("Authorization", "Bearer "+limited)
			begin := time.Now()
			res, err := hc.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				answers.Add(1)
			}
			if d := int64(time.Since(begin)); d > slowest.Load() {
				slowest.Store(d)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })

	testkit.Eventually(t, "quota calls reach Redis while it is fast", func() bool { return proxy.evals.Load() > 0 })
	proxy.slow.Store(true)
	testkit.Eventually(t, "the breaker opens on the slow Redis", func() bool { return !allShared(t, []*edgeProc{edge}, true) })
	// A quota call let through while the breaker was still closed may not
	// have written its EVALSHA yet (a new connection's dial and handshake, a
	// busy machine): it can write only before its call deadline (go-redis
	// sets the connection's write deadline from it), so count from after that.
	// Not a wait for an event (no call reports that it will never write): a
	// bound of the edge's own deadline, ten of them for the proxy to read a
	// late write on a loaded machine.
	time.Sleep(10 * redisconn.DefaultCallTimeout)
	const trialFailed = `"from":"half-open","to":"open"`
	evals, probes, trials, before := proxy.evals.Load(), proxy.probes.Load(), strings.Count(edge.stderr.String(), trialFailed), answers.Load()
	slowest.Store(0)
	// Measured window: more than two open timeouts (2 s each), so the
	// breaker goes half-open at least twice while partners keep calling.
	time.Sleep(5 * time.Second)
	// The half-open trials come every 2 s on the probe's schedule; on a
	// machine too busy to run the probe on time they come later, never
	// from a partner's request: wait for them rather than for the clock.
	testkit.Eventually(t, "a failed half-open trial logged (the breaker's open timeout is 2 s)", func() bool {
		return strings.Count(edge.stderr.String(), trialFailed) > trials
	})
	testkit.Eventually(t, "a health probe reaches the slow Redis (the half-open trials are the probe's)", func() bool {
		return proxy.probes.Load() > probes
	})
	if n := proxy.evals.Load() - evals; n != 0 {
		t.Errorf("%d quota calls reached the slow Redis after the breaker opened: a partner's request (or the quota refill) ran the half-open trial", n)
	}
	if n := answers.Load() - before; n < 10 {
		t.Errorf("only %d answers while the breaker was open or half-open: the traffic did not run", n)
	}
	t.Logf("slow Redis, breaker open or half-open: %d answers, the slowest %v", answers.Load()-before, time.Duration(slowest.Load()))

	proxy.slow.Store(false)
	testkit.Eventually(t, "the health probe closes the breaker once Redis is fast again", func() bool {
		return allShared(t, []*edgeProc{edge}, true)
	})
	testkit.Eventually(t, "quota calls reach Redis again", func() bool { return proxy.evals.Load() > evals })
}
