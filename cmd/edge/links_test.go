package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// askTraced sends GET path with a correlation id and, when traceparent is
// not empty, a partner's traceparent; it answers the status.
func (e *traceEdge) askTraced(t *testing.T, path, corr, traceparent string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", e.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Svc-Correlation-Id", corr)
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// sampledParent is a partner's traceparent with the sampled flag: the
// partner's own trace, kept by the parent-based sampler.
func sampledParent() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}

// coalesce sends one request without a traceparent (the leader, which the
// sampler at 0.01 drops), waits until its PMS call has reached the
// simulator (which holds it for latency), then n followers, each with a
// sampled traceparent, which join the call in flight. A leader that the
// held snapshot answers (a hit: with a TTL, until the snapshot is past
// EDGE_CACHE_STALE) leads nothing, and the next one is sent. It answers
// the correlation ids: the leader's, then the followers'.
func coalesce(t *testing.T, e *traceEdge, path, name string, n int, latency time.Duration) (string, []string) {
	t.Helper()
	e.sim.SetFaults(pmsim.Faults{Latency: latency})
	defer e.sim.Heal()
	var wg sync.WaitGroup
	defer wg.Wait()
	leader := ""
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no request reached the simulator within %v", name, testkit.EventuallyTimeout)
		}
		corr := fmt.Sprintf("%s-leader-%d", name, i)
		before := e.sim.Requests()
		answered := make(chan struct{})
		wg.Go(func() {
			defer close(answered)
			if code := e.askTraced(t, path, corr, ""); code != 200 {
				t.Errorf("%s: %d", corr, code)
			}
		})
		reached := func() bool { return e.sim.Requests() != before }
	wait: // poll: the leader's call reaching the simulator, or its answer, is the outside event
		for !reached() {
			select {
			case <-answered:
				break wait
			case <-time.After(5 * time.Millisecond):
			}
		}
		if reached() {
			leader = corr
			break
		}
		time.Sleep(50 * time.Millisecond) // poll: the snapshot's ageing past EDGE_CACHE_STALE is the outside event
	}
	var followers []string
	for i := range n {
		corr := fmt.Sprintf("%s-follower-%d", name, i)
		followers = append(followers, corr)
		wg.Go(func() {
			if code := e.askTraced(t, path, corr, sampledParent()); code != 200 {
				t.Errorf("%s: %d", corr, code)
			}
		})
	}
	wg.Wait()
	for _, corr := range followers {
		if l := e.line(t, corr); l["cache"] != "coalesced" {
			t.Fatalf("%s did not join the call in flight: %v", corr, l)
		}
	}
	return leader, followers
}

// linkTo is a FOLLOWS_FROM reference of a span.
type linkTo struct{ trace, span, from string }

// TestJaegerEveryLinkOpens (docs/contract.md section 20 and 22, "An SRE
// never follows a dead link"; docs/observability.md, "Walks"): three
// edges on the shipped sampler (parentbased_traceidratio at 0.01), two
// with a cache TTL, one with EDGE_CACHE_TTL=0, exporting to a real Jaeger
// v2. At TTL 0, requests that join a load in flight (with a partner's
// sampled traceparent, so that they are kept) link to the request leading
// it, which the sampler dropped (a get and a list). With a TTL, walks
// follow the clock and no request starts one (docs/contract.md section
// 24): requests that wait for a walk (the snapshot being past
// EDGE_CACHE_STALE) link to that walk alone, and every walk (the start-up
// walk, a refresh) links to no request. Then every link of every trace
// Jaeger holds opens a trace Jaeger holds, with the span it names.
func TestJaegerEveryLinkOpens(t *testing.T) {
	j, simTel := jaegerStack(t)
	const ratio = "0.01"

	ttl := startTraceEdge(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "2s", "EDGE_CACHE_STALE": "1h",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio,
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-links-ttl"})
	// Past its TTL this edge's snapshot is past EDGE_CACHE_STALE too: no
	// held snapshot answers while the walk on the clock runs, and requests
	// wait for it.
	expired := startTraceEdge(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "1s", "EDGE_CACHE_STALE": "1s",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio,
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-links-expired"})
	zero := startTraceEdge(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "0",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio,
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-links-ttl0"})

	// Followers and their leaders, by edge.
	type group struct {
		e         *traceEdge
		leader    string // "": none (a walk on the clock leads)
		followers []string
		walk      bool // the followers link to a walk
	}
	var groups []group
	testkit.Eventually(t, "the start-up walk ended", func() bool {
		return strings.Contains(expired.s.stderr.String(), `"msg":"pms walk finished"`)
	})
	_, f := coalesce(t, expired, "/v1/properties", "expired", 3, 800*time.Millisecond)
	groups = append(groups, group{expired, "", f, true})
	_, body := zero.ask(t, "/v1/properties", zero.key, "ids")
	m := propertyID.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no property id in %s", body)
	}
	l, f := coalesce(t, zero, "/v1/properties/"+m[1], "ttl0-get", 3, 800*time.Millisecond)
	groups = append(groups, group{zero, l, f, false})
	l, f = coalesce(t, zero, "/v1/properties", "ttl0-list", 2, 800*time.Millisecond)
	groups = append(groups, group{zero, l, f, false})

	// A refresh on the clock, while cached hits (dropped by the sampler)
	// are answered from the held snapshot.
	var refresh *jTrace
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for i := 0; refresh == nil && time.Now().Before(deadline); i++ {
		if code := ttl.askTraced(t, "/v1/properties", fmt.Sprintf("hit-%d", i), ""); code != 200 {
			t.Fatalf("hit: %d", code)
		}
		q := url.Values{"service": {"partner-edge"}, "operation": {"pms.walk"}, "lookback": {"1h"}, "limit": {"100"},
			"tags": {`{"partner_edge.walk.kind":"refresh","service.instance.id":"edge-links-ttl"}`}}
		for _, tr := range j.get(t, "/api/traces?"+q.Encode()) {
			refresh = &tr
		}
		time.Sleep(100 * time.Millisecond) // poll: the TTL's passing, and the walk's export, are the outside events
	}
	if refresh == nil {
		t.Fatal("no refresh walk reached Jaeger")
	}

	// At TTL 0 each follower's trace links to its leader's server span;
	// the leader, dropped by the sampler, is kept. With a TTL a waiting
	// request links to the walk alone.
	for _, g := range groups {
		ll := map[string]any{}
		if g.leader != "" {
			if ll = g.e.line(t, g.leader); ll["trace_sampled"] != true {
				t.Errorf("%s: the leader of followers that link to it is not kept: %v", g.leader, ll)
				continue
			}
		}
		for _, corr := range g.followers {
			fl := g.e.line(t, corr)
			tr := j.trace(t, fl["trace_id"].(string), func(tr *jTrace) bool { return len(tr.Spans) > 0 })
			var server jSpan
			for _, s := range tr.Spans {
				if s.SpanID == fl["span_id"] {
					server = s
				}
			}
			if g.leader != "" && !server.linksTo(ll["trace_id"].(string), ll["span_id"].(string)) {
				t.Errorf("%s does not link to its leader %s (%v/%v):\n%s", corr, g.leader, ll["trace_id"], ll["span_id"], describe(tr))
			}
			walks := 0
			for _, r := range server.References {
				if r.RefType == "FOLLOWS_FROM" && r.TraceID != ll["trace_id"] {
					walks++
				}
			}
			if g.walk != (walks == 1) {
				t.Errorf("%s links to %d walks, want a walk: %v", corr, walks, g.walk)
			}
		}
	}

	// Every link of every trace Jaeger holds opens.
	held := map[string]*jTrace{}
	var links []linkTo
	for _, tr := range j.get(t, "/api/traces?service=partner-edge&limit=5000&lookback=1h") {
		held[tr.TraceID] = &tr
		for _, s := range tr.Spans {
			for _, r := range s.References {
				if r.RefType == "FOLLOWS_FROM" {
					links = append(links, linkTo{r.TraceID, r.SpanID, s.OperationName + " in " + tr.TraceID})
				}
			}
		}
	}
	startedBy := 0
	for _, w := range j.get(t, "/api/traces?service=partner-edge&operation=pms.walk&lookback=1h&limit=100") {
		for _, s := range w.spans("pms.walk") {
			for _, r := range s.References {
				if r.RefType == "FOLLOWS_FROM" {
					startedBy++
				}
			}
		}
	}
	if startedBy != 0 || len(links) < 3 {
		t.Errorf("%d walks linked to a request, %d links in all: want none (walks follow the clock), and the followers' links", startedBy, len(links))
	}
	for _, l := range links {
		tr := j.trace(t, l.trace, func(tr *jTrace) bool { _, ok := tr.byID(l.span); return ok })
		if s, _ := tr.byID(l.span); s.service != "partner-edge" {
			t.Errorf("%s links to %s/%s, a span of %q", l.from, l.trace, l.span, s.service)
		}
	}
	t.Logf("%d links checked, %d traces held", len(links), len(held))
	if strings.Contains(describe(refresh), "links=") {
		t.Errorf("the refresh walk links to a request:\n%s", describe(refresh))
	}
	// The start-up walks: the edges' own, linked to no request.
	for _, inst := range []string{"edge-links-ttl", "edge-links-expired"} {
		q := url.Values{"service": {"partner-edge"}, "operation": {"pms.walk"}, "lookback": {"1h"}, "limit": {"100"},
			"tags": {`{"partner_edge.walk.kind":"first_load","service.instance.id":"` + inst + `"}`}}
		walks := j.get(t, "/api/traces?"+q.Encode())
		if len(walks) != 1 {
			t.Errorf("%s: %d first loads, want the start-up walk alone", inst, len(walks))
			continue
		}
		for _, root := range walks[0].spans("pms.walk") {
			if len(root.References) != 0 {
				t.Errorf("%s: the start-up walk links to a request:\n%s", inst, describe(&walks[0]))
			}
		}
	}
}
