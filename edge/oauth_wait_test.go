package edge_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

func publicKeys(keys ...jose.JSONWebKey) []jose.JSONWebKey {
	out := make([]jose.JSONWebKey, len(keys))
	for i, k := range keys {
		out[i] = k.Public()
	}
	return out
}

func ecJWK(t testing.TB, kid string) jose.JSONWebKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: "ES256", Use: "sig"}
}

// waitTimer is the verifier's injected timer: every wait asks it for a
// channel; all of them fire when the test says so.
type waitTimer struct {
	fire  chan time.Time
	mu    sync.Mutex
	asked []time.Duration
}

func (wt *waitTimer) after(d time.Duration) <-chan time.Time {
	wt.mu.Lock()
	wt.asked = append(wt.asked, d)
	wt.mu.Unlock()
	return wt.fire
}

func (wt *waitTimer) count() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return len(wt.asked)
}

// TestHangingIssuerShedsNoOne (docs/contract.md section 17)
// over real HTTP: the issuer's JWKS hangs; 1,100 concurrent tokens of
// unknown kids from one address wait for the one fetch in flight without
// holding load-shedding slots (EDGE_MAX_CONCURRENT at its default, 1024),
// so API keys from another address are all answered 200; when the 1 s
// wait ends (the injected timer) every token answers 503 with Retry-After,
// and they count toward their address's failed-authentication throttle.
func TestHangingIssuerShedsNoOne(t *testing.T) {
	good := ecJWK(t, "good")
	ri := oauthtest.NewIssuer(t, publicKeys(good)...)
	clk := testkit.NewClockAt(time.Now())
	wt := &waitTimer{fire: make(chan time.Time)}
	// The fetch hangs until the test ends: its own timeout (5 s by default,
	// on the wall clock) would end the wait before the injected timer does
	// when a loaded machine takes that long to send the flood.
	v, err := oauth.New(t.Context(), oauth.Config{Issuer: ri.URL(), Audience: oauthAudience,
		Now: clk.Now, After: wt.after, FetchTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{now: clk.Now, pmsCallTimeout: time.Minute, maxConcurrent: 1024, authFailLimit: 20,
		oauth:   &edge.OAuth{Issuer: ri.URL(), Audience: oauthAudience, Verifier: v},
		keyOver: map[string]map[string]any{"live": {"clientId": "partner-a"}}})
	req := request{path: "/v1/", key: signWith(t, good, accessClaims(ri.URL(), "partner-a", "properties:read", clk.Now()), "at+jwt")}
	wantOK(t, req, h.do(req))
	wt.mu.Lock()
	wt.asked = nil // the start's wait
	wt.mu.Unlock()

	ri.SetHanging(true)
	const flood = 1100
	rogue := ecJWK(t, "")
	tokens := make([]string, flood)
	for i := range tokens {
		rogue.KeyID = fmt.Sprintf("rogue-%d", i)
		tokens[i] = signWith(t, rogue, accessClaims(ri.URL(), "partner-a", "properties:read", clk.Now()), "at+jwt")
	}
	tr := &http.Transport{MaxIdleConnsPerHost: flood}
	t.Cleanup(tr.CloseIdleConnections)
	flooder := &http.Client{Transport: tr}
	type answer struct {
		status     int
		retryAfter string
		body       string
		err        error
	}
	answers := make([]answer, flood)
	var answered atomic.Int64 // before the wait ends: only tokens shed on arrival, if any
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Go(func() {
			defer answered.Add(1)
			r, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/v1/properties", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			res, err := flooder.Do(r)
			if err != nil {
				answers[i].err = err
				return
			}
			var pb struct{ Code string }
			_ = json.NewDecoder(res.Body).Decode(&pb)
			res.Body.Close()
			answers[i] = answer{res.StatusCode, res.Header.Get("Retry-After"), pb.Code, nil}
		})
	}
	// Every token waits, unless more than 1,024 arrived at the very same
	// moment and the last were shed before the first gave their places up.
	testkit.Eventually(t, "1,100 tokens waiting for the key fetch (or shed on arrival)", func() bool {
		return wt.count()+int(answered.Load()) == flood
	})
	if n := answered.Load(); n > flood-1000 {
		t.Errorf("%d tokens shed on arrival, want (nearly) none: waiting ones hold no place", n)
	}

	// Meanwhile, API keys from another address: none shed.
	for i := range 200 {
		req := request{path: "/v1/properties", key: "live", from: "127.0.0.2"}
		if res := h.do(req); res.status != http.StatusOK {
			t.Fatalf("API key %d from 127.0.0.2 while tokens wait: got %d, want 200: %s", i, res.status, res.body)
		}
	}
	if n := ri.JWKSHits.Load(); n != 2 {
		t.Errorf("JWKS requests %d, want 2 (the start's, then one in flight for all)", n)
	}
	close(wt.fire) // the 1 s the tokens wait is over
	wg.Wait()
	for i, a := range answers {
		if a.err != nil || a.status != http.StatusServiceUnavailable || a.body != string(problem.ServiceUnavailable) || a.retryAfter == "" {
			t.Fatalf("token %d: %d %s Retry-After %q %v; want 503 SERVICE_UNAVAILABLE with Retry-After", i, a.status, a.body, a.retryAfter, a.err)
		}
	}
	for _, d := range wt.asked {
		if d != oauth.DefaultMaxWait {
			t.Fatalf("a token waited up to %v, want %v", d, oauth.DefaultMaxWait)
		}
	}
	// The waits counted toward 127.0.0.1's throttle, not 127.0.0.2's.
	req = request{path: "/v1/properties", key: tokens[0]}
	wantProblem(t, req, h.do(req), problem.RateLimited)
	req = request{path: "/v1/properties", key: "live", from: "127.0.0.2"}
	wantOK(t, req, h.do(req))
}

// TestKeyPublishedAfterStartAccepted (docs/contract.md
// section 17): the fetch at start is not a refetch, so a token signed by a
// key the issuer publishes 1 s after the edge started is answered 200 on
// its first use.
func TestKeyPublishedAfterStartAccepted(t *testing.T) {
	old, rotated := ecJWK(t, "old"), ecJWK(t, "rotated")
	ri := oauthtest.NewIssuer(t, publicKeys(old)...)
	clk := testkit.NewClockAt(time.Now())
	opts, _ := tokenOpts(t, ri.URL(), clk, harnessOptions{})
	h := newHarness(t, opts)
	ri.Publish(publicKeys(rotated, old)...)
	clk.Advance(time.Second)
	req := request{path: "/v1/properties", key: signWith(t, rotated, accessClaims(ri.URL(), "partner-a", "properties:read", clk.Now()), "at+jwt")}
	wantOK(t, req, h.do(req))
	if n := ri.JWKSHits.Load(); n != 2 {
		t.Errorf("JWKS requests %d, want 2", n)
	}
}
