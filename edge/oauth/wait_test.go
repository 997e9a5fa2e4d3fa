package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// hangingIssuer answers nothing until its request ends or release is
// closed, then the JWKS of keys; it records how many fetches it saw and
// the most at once.
type hangingIssuer struct {
	release        chan struct{}
	keys           []jose.JSONWebKey
	hits, now, max atomic.Int64
}

func (h *hangingIssuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.hits.Add(1)
	n := h.now.Add(1)
	defer h.now.Add(-1)
	for m := h.max.Load(); n > m && !h.max.CompareAndSwap(m, n); m = h.max.Load() {
	}
	select {
	case <-r.Context().Done():
		return
	case <-h.release:
	}
	if r.URL.Path != "/jwks" {
		_, _ = fmt.Fprintf(w, `{"issuer":"https://idp.example.com","jwks_uri":"https://idp.example.com/jwks"}`)
		return
	}
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: h.keys})
}

// TestHangingIssuer (docs/contract.md section 17), on the
// bubble's clock: start-up waits 1 s for a hanging issuer, not the 5 s of
// the fetch; 1,100 concurrent tokens of unknown kids share the one fetch in
// flight and answer Unavailable (503 with Retry-After) after exactly 1 s;
// once it failed, the first unknown kid may fetch at once, the next ones
// wait for the 30 s; cancelling New's context ends the background fetch.
func TestHangingIssuer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		is := &hangingIssuer{release: make(chan struct{})}
		clk := testkit.From(newClock().Now()) // the fixed day, moving with the bubble's clock
		start := time.Now()
		v, err := oauth.New(ctx, oauth.Config{Issuer: "https://idp.example.com", Audience: testAudience, Now: clk,
			HTTPClient: &http.Client{Transport: testkit.InProcess{Handler: is}}})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != oauth.DefaultMaxWait {
			t.Fatalf("start-up with a hanging issuer took %v, want %v", took, oauth.DefaultMaxWait)
		}
		if v.Ready() {
			t.Fatal("ready without keys")
		}
		sg := oauthtest.NewSigner(t, "", jose.ES256)
		tokens := make([]string, 1100)
		for i := range tokens {
			tokens[i] = sg.As(fmt.Sprintf("unknown-%d", i), jose.ES256).Sign(t, claims("https://idp.example.com", clk(), "c"), nil)
		}
		t0 := time.Now()
		errs := make([]error, len(tokens))
		took := make([]time.Duration, len(tokens))
		var wg sync.WaitGroup
		for i, tok := range tokens {
			wg.Go(func() {
				_, errs[i] = v.Verify(ctx, tok)
				took[i] = time.Since(t0)
			})
		}
		wg.Wait()
		for i := range tokens {
			if after := unavailableAfter(t, errs[i]); after < time.Second {
				t.Fatalf("token %d: RetryAfter %v, want at least 1s", i, after)
			}
			if took[i] != oauth.DefaultMaxWait {
				t.Fatalf("token %d answered after %v, want %v", i, took[i], oauth.DefaultMaxWait)
			}
		}
		if is.hits.Load() != 1 || is.max.Load() != 1 {
			t.Fatalf("issuer saw %d fetches, %d at once; want the start's one", is.hits.Load(), is.max.Load())
		}
		time.Sleep(oauth.DefaultFetchTimeout) // the start's fetch gives up
		synctest.Wait()
		// The fetch at start is not a refetch: the first unknown kid fetches at once.
		t1 := time.Now()
		if _, err := v.Verify(ctx, tokens[0]); time.Since(t1) != oauth.DefaultMaxWait {
			t.Fatalf("first unknown kid after start: %v after %v, want Unavailable after 1s", err, time.Since(t1))
		}
		if is.hits.Load() != 2 {
			t.Fatalf("issuer saw %d fetches, want 2", is.hits.Load())
		}
		time.Sleep(oauth.DefaultFetchTimeout)
		synctest.Wait()
		t2 := time.Now()
		wait := unavailableAfter(t, func() error { _, err := v.Verify(ctx, tokens[1]); return err }())
		if time.Since(t2) != 0 || is.hits.Load() != 2 {
			t.Fatalf("within 30 s of a fetch: waited %v, %d fetches; want no wait, no fetch", time.Since(t2), is.hits.Load())
		}
		if want := oauth.DefaultMinRefetch - oauth.DefaultFetchTimeout - oauth.DefaultMaxWait; wait != want {
			t.Errorf("RetryAfter %v, want %v (until the next fetch may start)", wait, want)
		}
		// A fetch still hanging when the verifier's context ends stops.
		time.Sleep(wait)
		go func() { _, _ = v.Verify(ctx, tokens[2]) }()
		synctest.Wait()
		if is.now.Load() != 1 {
			t.Fatalf("%d fetches in flight, want 1", is.now.Load())
		}
		cancel()
		synctest.Wait()
		if is.now.Load() != 0 {
			t.Error("the fetch outlived the verifier's context")
		}
	})
}

// TestStartFetchFinishesInBackground: a start-up fetch longer than 1 s
// goes on after New returns, and its keys are used without another fetch.
func TestStartFetchFinishesInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sg := oauthtest.NewSigner(t, "k1", jose.ES256)
		is := &hangingIssuer{release: make(chan struct{}), keys: []jose.JSONWebKey{sg.JWK()}}
		clk := testkit.From(newClock().Now()) // the fixed day, moving with the bubble's clock
		v, err := oauth.New(t.Context(), oauth.Config{Issuer: "https://idp.example.com", Audience: testAudience, Now: clk,
			HTTPClient: &http.Client{Transport: testkit.InProcess{Handler: is}}})
		if err != nil {
			t.Fatal(err)
		}
		if v.Ready() {
			t.Fatal("ready before the issuer answered")
		}
		time.Sleep(2 * time.Second)
		close(is.release)
		synctest.Wait()
		if !v.Ready() {
			t.Fatal("the start's fetch did not finish in the background")
		}
		if _, err := v.Verify(t.Context(), sg.Sign(t, claims("https://idp.example.com", clk(), "c"), nil)); err != nil {
			t.Fatal(err)
		}
		if v.Fetches() != 1 {
			t.Errorf("%d fetches, want 1", v.Fetches())
		}
	})
}

// TestFirstRotationAfterStart (docs/contract.md section
// 17): the fetch at start is not a refetch, so a key published 1 s after
// start is fetched for the first token that names it; a second rotation
// then waits for the 30 s since that fetch.
func TestFirstRotationAfterStart(t *testing.T) {
	s := newSetup(t)
	iss := s.is.URL()
	first := oauthtest.NewSigner(t, "k-first-rotation", jose.ES256)
	s.is.Publish(first.JWK(), s.signers[jose.RS256].JWK())
	s.clk.Advance(time.Second)
	if _, err := s.v.Verify(context.Background(), first.Sign(t, claims(iss, s.clk.Now(), "c"), nil)); err != nil {
		t.Fatalf("key published 1 s after start, first use: %v", err)
	}
	second := oauthtest.NewSigner(t, "k-second-rotation", jose.ES256)
	s.is.Publish(second.JWK(), first.JWK())
	s.clk.Advance(29 * time.Second)
	if _, err := s.v.Verify(context.Background(), second.Sign(t, claims(iss, s.clk.Now(), "c"), nil)); kindOf(err) != oauth.Invalid {
		t.Fatalf("second rotation within 30 s of the last fetch: %v, want Invalid", err)
	}
	s.clk.Advance(time.Second)
	if _, err := s.v.Verify(context.Background(), second.Sign(t, claims(iss, s.clk.Now(), "c"), nil)); err != nil {
		t.Fatalf("second rotation 30 s after the last fetch: %v", err)
	}
	if got := s.is.JWKSHits.Load(); got != 3 {
		t.Errorf("JWKS fetched %d times, want 3", got)
	}
}
