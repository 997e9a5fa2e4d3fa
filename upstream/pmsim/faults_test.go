package pmsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// do is a GET that reports transport and body-read failures instead of
// failing the test.
func do(ctx context.Context, client *http.Client, url string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

func TestFaultErrorStatus(t *testing.T) {
	sim, srv := serve(t, Config{})
	for _, tc := range []struct {
		f          Faults
		status     int
		body, wait string
	}{
		{Faults{ErrorStatus: 503, RetryAfter: "2"}, 503, `{"error":"service_unavailable"}`, "2"},
		{Faults{ErrorStatus: 429, RetryAfter: "1"}, 429, `{"error":"too_many_requests"}`, "1"},
		{Faults{ErrorStatus: 502}, 502, `{"error":"bad_gateway"}`, ""},
		{Faults{ErrorRate: 1}, 500, `{"error":"internal_server_error"}`, ""},
	} {
		sim.SetFaults(tc.f)
		for range 3 {
			status, hdr, body, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 5, ""))
			if err != nil || status != tc.status || string(body) != tc.body || hdr.Get("Retry-After") != tc.wait {
				t.Fatalf("%+v: got %d %q %s %v", tc.f, status, hdr.Get("Retry-After"), body, err)
			}
		}
	}
	sim.Heal()
	if status, _, _, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 5, "")); err != nil || status != 200 {
		t.Fatalf("healed: %d %v", status, err)
	}
	if st := sim.Stats(); st.Requests != 13 || st.Faulted != 12 || st.Lists != 13 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFaultErrorRateIsSeeded(t *testing.T) {
	pattern := func(seed int64) []bool {
		sim, srv := serve(t, Config{Seed: seed})
		sim.SetFaults(Faults{ErrorRate: 0.3, ErrorStatus: 503})
		var out []bool
		for range 100 {
			status, _, _, err := do(t.Context(), srv.Client(), srv.URL+"/internal/v2/brands/aurora/hotels/x")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, status == 503)
		}
		return out
	}
	a, b := pattern(9), pattern(9)
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: same seed, different fate", i)
		}
		if a[i] {
			failed++
		}
	}
	if failed < 15 || failed > 45 {
		t.Fatalf("%d of 100 failed at rate 0.3", failed)
	}
}

func TestFaultFailFirstThenSucceed(t *testing.T) {
	sim, srv := serve(t, Config{})
	sim.SetFaults(Faults{FailFirst: 2, ErrorStatus: 502})
	var got []int
	for range 4 {
		status, _, _, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 5, ""))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, status)
	}
	if want := []int{502, 502, 200, 200}; !equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	sim.SetFaults(Faults{FailFirst: 1, Reset: true}) // the count restarts
	if _, _, _, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 5, "")); err == nil {
		t.Fatal("first request after SetFaults was not reset")
	}
	if n := sim.Requests(); n != 5 {
		t.Fatalf("requests %d, want 5: the reset request was replayed", n)
	}
	if status, _, _, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 5, "")); err != nil || status != 200 {
		t.Fatalf("second request: %d %v", status, err)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFaultReset(t *testing.T) {
	sim, srv := serve(t, Config{})
	sim.SetFaults(Faults{Reset: true})
	// Twice, and each counted once: no transport replays a begun answer.
	for range 2 {
		status, _, _, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 50, ""))
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("reset: status %d, error %v, want a connection reset", status, err)
		}
	}
	if st := sim.Stats(); st.Faulted != 2 || st.Requests != 2 {
		t.Fatalf("stats %+v", sim.Stats())
	}
}

func TestFaultTruncate(t *testing.T) {
	sim, srv := serve(t, Config{})
	sim.SetFaults(Faults{Truncate: true})
	status, hdr, body, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 50, ""))
	if status != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", status, hdr.Get("Content-Type"))
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading a truncated body: %v", err)
	}
	if len(body) == 0 || json.Valid(body) {
		t.Fatalf("got %d bytes, valid JSON %v", len(body), json.Valid(body))
	}
}

func TestFaultMalformed(t *testing.T) {
	sim, srv := serve(t, Config{})
	sim.SetFaults(Faults{Malformed: true})
	status, hdr, body, err := do(t.Context(), srv.Client(), srv.URL+"/internal/v2/brands/aurora/hotels/x")
	if err != nil || status != 200 || hdr.Get("Content-Type") != "application/json" || json.Valid(body) {
		t.Fatalf("got %d %q %s %v", status, hdr.Get("Content-Type"), body, err)
	}
}

func TestFaultOversize(t *testing.T) {
	sim, srv := serve(t, Config{})
	_, _, healthy, _ := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 10, ""))
	const limit = 1 << 20
	sim.SetFaults(Faults{OversizeBytes: limit})
	status, _, body, err := do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 10, ""))
	if err != nil || status != 200 {
		t.Fatalf("got %d %v", status, err)
	}
	if len(body) <= limit || len(body) > limit+64<<10 {
		t.Fatalf("body of %d bytes, want just past %d", len(body), limit)
	}
	var padded, plain any
	if err := json.Unmarshal(body, &padded); err != nil {
		t.Fatalf("oversized body is not JSON: %v", err)
	}
	_ = json.Unmarshal(healthy, &plain)
	a, _ := json.Marshal(padded)
	b, _ := json.Marshal(plain)
	if !bytes.Equal(a, b) {
		t.Fatal("oversized body does not carry the real answer")
	}
}

func TestFaultLatency(t *testing.T) {
	synctest.Test(t, testFaultLatency)
}

// Under synctest, the simulator called in process: its delays pass on the
// bubble's clock.
func testFaultLatency(t *testing.T) {
	sim := New(Config{Seed: 4})
	serve := func(ctx context.Context) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, listPath("aurora", 5, ""), nil))
		return rec
	}
	sim.SetFaults(Faults{Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond})
	start := time.Now()
	if rec := serve(t.Context()); rec.Code != 200 {
		t.Fatalf("slow request: %d", rec.Code)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d >= 60*time.Millisecond {
		t.Fatalf("slow request took %v, want Latency plus at most Jitter", d)
	}

	// A client that gives up is not kept waiting: the handler ends with
	// the request's context.
	sim.SetFaults(Faults{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	serve(ctx)
	if d := time.Since(start); d != 50*time.Millisecond {
		t.Fatalf("cancelled request held the handler %v, want until its deadline (50ms)", d)
	}
	if sim.Requests() != 2 {
		t.Fatalf("requests %d, want 2", sim.Requests())
	}
}

// TestFaultsChangeWhileServing runs requests while faults flip, for -race.
func TestFaultsChangeWhileServing(t *testing.T) {
	sim, srv := serve(t, Config{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				_, _, _, _ = do(t.Context(), srv.Client(), srv.URL+listPath("aurora", 5, ""))
			}
		})
	}
	for i := range 50 {
		if i%2 == 0 {
			sim.SetFaults(Faults{ErrorRate: 0.5, ErrorStatus: 503, Jitter: time.Millisecond})
		} else {
			sim.Heal()
		}
		sim.SetRecords("aurora", sim.Records("aurora"))
	}
	wg.Wait()
	if n := sim.Requests(); n != 100 {
		t.Fatalf("requests %d, want 100", n)
	}
}
