package edge_test

// Benchmarks of the edge's hot path, side by side with a bare handler that
// writes the same bytes, so that ratios measured in one run mean something
// on a shared, noisy machine:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./edge/
//
// The in-process benchmarks call ServeHTTP with benchWriter, a reusable
// ResponseWriter that discards the body, so only the handler's own cost is
// measured. The *HTTP benchmarks go over loopback with keep-alive. The
// edge's data comes from a real simulator on loopback through
// pms.Client, pms.Direct and upstream/cache, as in cmd/edge.
// bench/README.md explains the figures and the load scripts.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// benchHotels gives the brand more than 50 active properties, so that
// perPage=50 is a full page.
const benchHotels = 120

const benchUA = "bench/1.0"

// benchEnv is the edge in front of a simulator on loopback, with the PMS
// access built as cmd/edge builds it (client, direct mapping, cache).
type benchEnv struct {
	handler      http.Handler
	sim          *pmsim.Sim
	liveToken    string // every property
	grantedToken string // a list of benchGranted properties
	activeIDs    []string
	feed         *events.Feed // the live PMS's events feed
	cache        *cache.Cache
	started      time.Time    // when startWith built it: now's origin
	ahead        atomic.Int64 // how far now is moved on (ns): eventsAfter ages the cache past its TTL
}

// now is the environment's clock, of the edge, the cache, the walks and
// the feed: testkit.Epoch's day, moving with the wall clock from startWith
// on, plus ahead.
func (env *benchEnv) now() time.Time {
	return testkit.Epoch.Add(time.Since(env.started) + time.Duration(env.ahead.Load()))
}

// benchGranted is the size of the granted key's property list.
const benchGranted = 20

// newBenchEnv starts the environment. ttl is the cache TTL (0 passes every
// call through to the PMS); logger nil discards the access log.
func newBenchEnv(tb testing.TB, ttl time.Duration, logger *slog.Logger) *benchEnv {
	tb.Helper()
	env := &benchEnv{sim: pmsim.New(benchSimConfig)}
	pms := httptest.NewServer(env.sim)
	tb.Cleanup(pms.Close)
	return env.start(tb, pms.URL, ttl, logger)
}

// benchSimConfig is the benchmarks' simulator.
var benchSimConfig = pmsim.Config{Seed: 1, HotelsPerBrand: benchHotels}

// start builds the edge over the PMS at pmsURL.
func (env *benchEnv) start(tb testing.TB, pmsURL string, ttl time.Duration, logger *slog.Logger) *benchEnv {
	tb.Helper()
	return env.startWith(tb, pmsURL, ttl, edge.Config{Logger: logger, Now: env.now})
}

// startWith is start with the edge's settings cfg (Brand, DocsURL,
// Healthy and Events are the environment's; its callers give it env.now).
func (env *benchEnv) startWith(tb testing.TB, pmsURL string, ttl time.Duration, cfg edge.Config) *benchEnv {
	tb.Helper()
	env.started = time.Now()
	// The client's clock moves on from the environment's, not with ahead:
	// a jump would end a PMS hold early.
	client, err := pms.NewClient(pms.ClientConfig{BaseURL: pmsURL, Now: testkit.From(env.now())})
	if err != nil {
		tb.Fatalf("new client: %v", err)
	}
	tb.Cleanup(client.CloseIdleConnections)
	// The cache's, the walks' and the feed's clock: eventsAfter moves it on.
	now := env.now
	direct := pms.NewDirect(client, pms.DirectOptions{Brand: testBrand, Now: now})
	feed, err := events.New(events.Config{Mode: "live", Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(feed.Close)
	env.feed = feed
	// The feed watches the cache's load, as in cmd/edge: lists carry its
	// cursor (meta.events.next).
	c := cache.New(direct, cache.Config{Key: testBrand + "/live", TTL: ttl, Load: feed.Watch(direct.Snapshot), Now: now})
	tb.Cleanup(c.Close)
	env.cache = c

	snap, err := direct.Snapshot(context.Background())
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	if len(snap.Active) < 50 {
		tb.Fatalf("only %d active properties; want a full page of 50", len(snap.Active))
	}
	for _, it := range snap.Active {
		env.activeIDs = append(env.activeIDs, it.ID)
	}

	var recs []keys.Record
	mint := func(props []string) string {
		token, rec, err := keys.Mint(rand.Reader, testBrand, keys.ModeLive, props)
		if err != nil {
			tb.Fatalf("mint: %v", err)
		}
		recs = append(recs, rec)
		return token
	}
	env.liveToken = mint(nil)
	granted := make([]string, 0, benchGranted)
	for i := 0; i < benchGranted; i++ { // spread over the list
		granted = append(granted, env.activeIDs[i*len(env.activeIDs)/benchGranted])
	}
	env.grantedToken = mint(granted)
	store := keystest.Open(tb, recs...)
	cfg.Brand, cfg.DocsURL, cfg.Healthy, cfg.Events = testBrand, testDocsURL, store.Usable, edge.Feeds{Live: feed}
	env.handler = edge.NewServer(cfg, store, c, nil)
	return env
}

// request is a GET of target as a partner sends it (curl-like headers).
func (env *benchEnv) request(target, token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	r.Header.Set("User-Agent", benchUA)
	r.Header.Set("Accept", "*/*")
	return r
}

// benchWriter is a reusable http.ResponseWriter that discards the body:
// cheaper than httptest.ResponseRecorder, so the handler's cost stands out.
// Its header map is cleared, not replaced, between requests.
type benchWriter struct {
	header http.Header
	status int
	n      int
}

func newBenchWriter() *benchWriter { return &benchWriter{header: make(http.Header, 8)} }

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.status, w.n = 0, 0
}

// capture answers r once and returns what a client would see.
func capture(tb testing.TB, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// baselineHandler writes body with the headers of res (values copied once):
// the floor an answer can cost, a bare handler writing fixed bytes.
func baselineHandler(res *httptest.ResponseRecorder) http.Handler {
	body := res.Body.Bytes()
	type kv struct {
		k string
		v []string
	}
	var hs []kv
	for k, v := range res.Result().Header {
		hs = append(hs, kv{k, v})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		for _, e := range hs {
			h[e.k] = e.v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

// serveLoop calls h with r b.N times and checks every status.
func serveLoop(b *testing.B, h http.Handler, r *http.Request, want int) {
	b.Helper()
	w := newBenchWriter()
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, r)
		if w.status != want {
			b.Fatalf("status %d, want %d", w.status, want)
		}
	}
	b.ReportMetric(float64(w.n), "resp-bytes")
}

// warm answers r once through h, checks the status and returns the answer.
func warm(tb testing.TB, h http.Handler, r *http.Request, want int) *httptest.ResponseRecorder {
	tb.Helper()
	res := capture(tb, h, r)
	if res.Code != want {
		tb.Fatalf("%s: status %d, want %d: %.300s", r.URL, res.Code, want, res.Body.Bytes())
	}
	return res
}

const listTarget = "/v1/properties?perPage=50"

func BenchmarkBaselineFixedBytes(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	res := warm(b, env.handler, env.request(listTarget, env.liveToken), http.StatusOK)
	serveLoop(b, baselineHandler(res), env.request(listTarget, env.liveToken), http.StatusOK)
}

func BenchmarkCachedList(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	r := env.request(listTarget, env.liveToken)
	warm(b, env.handler, r, http.StatusOK)
	serveLoop(b, env.handler, r, http.StatusOK)
}

// BenchmarkCachedListAccessLog is BenchmarkCachedList with the access log
// on, as deployed by default (EDGE_LOG_LEVEL=info, JSON, the redacting and
// trace-annotating logger of cmd/edge), written to io.Discard: the
// difference is the access log's cost.
func BenchmarkCachedListAccessLog(b *testing.B) {
	logger := observability.NewLogger(io.Discard, "json", slog.LevelInfo, "pms-token-secret")
	env := newBenchEnv(b, time.Hour, logger)
	r := env.request(listTarget, env.liveToken)
	warm(b, env.handler, r, http.StatusOK)
	serveLoop(b, env.handler, r, http.StatusOK)
}

func BenchmarkCachedGet(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	r := env.request("/v1/properties/"+env.activeIDs[len(env.activeIDs)/2], env.liveToken)
	warm(b, env.handler, r, http.StatusOK)
	serveLoop(b, env.handler, r, http.StatusOK)
}

// BenchmarkCachedListGrantedKey lists with a key granted benchGranted
// properties: the page is filtered per request.
func BenchmarkCachedListGrantedKey(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	r := env.request(listTarget, env.grantedToken)
	warm(b, env.handler, r, http.StatusOK)
	serveLoop(b, env.handler, r, http.StatusOK)
}

func BenchmarkProblem404(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	r := env.request("/v1/no-such-route", env.liveToken)
	warm(b, env.handler, r, http.StatusNotFound)
	serveLoop(b, env.handler, r, http.StatusNotFound)
}

func BenchmarkHealth(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	r := env.request("/v1/health", "")
	warm(b, env.handler, r, http.StatusOK)
	serveLoop(b, env.handler, r, http.StatusOK)
}

// eventsAfter makes the env's feed hold an event for every property: the
// simulator's hotels are renamed after the first walk and the snapshot is
// loaded again (Cache.Refresh's walk); it returns the first walk's list
// cursor, after which the feed has them all.
func (env *benchEnv) eventsAfter(tb testing.TB) string {
	tb.Helper()
	first, err := env.cache.Snapshot(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	cursor := env.feed.Next(first)
	var recs []json.RawMessage
	for _, raw := range env.sim.Records(testBrand) {
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil {
			tb.Fatal(err)
		}
		if name, ok := rec["display_name"].(string); ok {
			rec["display_name"] = name + " Renovated"
		}
		b, _ := json.Marshal(rec)
		recs = append(recs, b)
	}
	env.sim.SetRecords(testBrand, recs)
	// The snapshot expired: the next call walks, two hours on the cache's
	// and the feed's clock after the first (a position of its own).
	env.ahead.Add(int64(2 * time.Hour))
	if second, err := env.cache.Snapshot(context.Background()); err != nil || second == first {
		tb.Fatalf("no second walk: %v", err)
	}
	return cursor
}

// BenchmarkCachedEvents reads a page of 50 events (docs/contract.md
// section 23: an events page costs no more than a list page of the same
// size; BenchmarkEventsVsListRatio measures both in one run).
func BenchmarkCachedEvents(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	r := env.request(eventsTarget(env.eventsAfter(b)), env.liveToken)
	warm(b, env.handler, r, http.StatusOK)
	serveLoop(b, env.handler, r, http.StatusOK)
}

// eventsTarget is a page of 50 events after cursor.
func eventsTarget(cursor string) string { return "/v1/events?limit=50&after=" + cursor }

// BenchmarkEventsVsListRatio alternates blocks of a list page of 50 and
// an events page of 50 (each event a property and its envelope), for the
// key of every property and for a granted key, and reports the ratio
// events/list, per answer and per byte answered. Both are one pooled
// buffer and one Write, with the same allocations (8 for the key of every
// property).
func BenchmarkEventsVsListRatio(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	cursor := env.eventsAfter(b)
	for _, tc := range []struct{ name, token string }{{"all", env.liveToken}, {"granted", env.grantedToken}} {
		b.Run(tc.name, func(b *testing.B) {
			list, evs := env.request(listTarget, tc.token), env.request(eventsTarget(cursor), tc.token)
			lres, eres := warm(b, env.handler, list, http.StatusOK), warm(b, env.handler, evs, http.StatusOK)
			if tc.name == "all" && (!bytes.Contains(eres.Body.Bytes(), []byte(`"hasMore":true`)) || bytes.Count(eres.Body.Bytes(), []byte(`"object":"event"`)) != 50) {
				b.Fatalf("events page: %.300s", eres.Body.String())
			}
			const block = 64
			w := newBenchWriter()
			var tList, tEvents time.Duration
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				for range block {
					w.reset()
					env.handler.ServeHTTP(w, list)
				}
				t1 := time.Now()
				for range block {
					w.reset()
					env.handler.ServeHTTP(w, evs)
				}
				tList, tEvents = tList+t1.Sub(t0), tEvents+time.Since(t1)
				n += block
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
			b.ReportMetric(float64(lres.Body.Len()), "list-bytes")
			b.ReportMetric(float64(eres.Body.Len()), "events-bytes")
			b.ReportMetric(float64(tList.Nanoseconds())/float64(n), "list-ns/req")
			b.ReportMetric(float64(tEvents.Nanoseconds())/float64(n), "events-ns/req")
			b.ReportMetric(float64(tEvents)/float64(tList), "events/list")
			// Per byte written: an event is a property and its envelope
			// (id, type, occurredAt), so a page of 50 events is half as large
			// again as a list page of 50 properties.
			b.ReportMetric((float64(tEvents)/float64(eres.Body.Len()))/(float64(tList)/float64(lres.Body.Len())), "events/list-per-byte")
		})
	}
}

// BenchmarkCachedListRatio alternates blocks of the bare handler and the
// edge on the same request, so both see the same machine load, and reports
// their ns/op and the ratio edge/baseline: the figure to quote.
func BenchmarkCachedListRatio(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	r := env.request(listTarget, env.liveToken)
	base := baselineHandler(warm(b, env.handler, r, http.StatusOK))
	const block = 64
	w := newBenchWriter()
	var tBase, tEdge time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range block {
			w.reset()
			base.ServeHTTP(w, r)
		}
		t1 := time.Now()
		for range block {
			w.reset()
			env.handler.ServeHTTP(w, r)
		}
		tBase, tEdge = tBase+t1.Sub(t0), tEdge+time.Since(t1)
		n += block
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(n), "base-ns/req")
	b.ReportMetric(float64(tEdge.Nanoseconds())/float64(n), "edge-ns/req")
	b.ReportMetric(float64(tEdge)/float64(tBase), "edge/base")
}

// BenchmarkCachedListCompressed is BenchmarkCachedList with Accept-Encoding
// gzip and zstd, and the plain list beside them, in alternating blocks (as
// BenchmarkCachedListRatio), so the ratios compressed/plain are measured
// under the same load: docs/contract.md section 18 bounds them at 1.5. The
// page's start is compressed once per snapshot (edge/respond.go,
// writePageCoded); the per-request work is the meta and the copy of about
// 3 KB instead of 12. The granted key's page, filtered per request, is
// cached by key, page number and size.
func BenchmarkCachedListCompressed(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	for _, tc := range []struct{ name, token string }{{"all", env.liveToken}, {"granted", env.grantedToken}} {
		b.Run(tc.name, func(b *testing.B) {
			plain := env.request(listTarget, tc.token)
			reqs := []*http.Request{plain}
			for _, ae := range []string{"gzip", "zstd"} {
				r := env.request(listTarget, tc.token)
				r.Header.Set("Accept-Encoding", ae)
				if got := warm(b, env.handler, r, http.StatusOK).Header().Get("Content-Encoding"); got != ae {
					b.Fatalf("Accept-Encoding %s: Content-Encoding %q", ae, got)
				}
				reqs = append(reqs, r)
			}
			warm(b, env.handler, plain, http.StatusOK)
			const block = 64
			w := newBenchWriter()
			var spent [3]time.Duration
			var sizes [3]int
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				for i, r := range reqs {
					t0 := time.Now()
					for range block {
						w.reset()
						env.handler.ServeHTTP(w, r)
					}
					spent[i] += time.Since(t0)
					sizes[i] = w.n
				}
				n += block
			}
			b.ReportMetric(float64(spent[0].Nanoseconds())/float64(n), "plain-ns/req")
			b.ReportMetric(float64(spent[1].Nanoseconds())/float64(n), "gzip-ns/req")
			b.ReportMetric(float64(spent[2].Nanoseconds())/float64(n), "zstd-ns/req")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "gzip/plain")
			b.ReportMetric(float64(spent[2])/float64(spent[0]), "zstd/plain")
			b.ReportMetric(float64(sizes[0]), "plain-bytes")
			b.ReportMetric(float64(sizes[1]), "gzip-bytes")
			b.ReportMetric(float64(sizes[2]), "zstd-bytes")
		})
	}
}

// BenchmarkMissList disables the cache (TTL 0): every request walks the
// simulator's list over loopback and maps every record.
func BenchmarkMissList(b *testing.B) {
	env := newBenchEnv(b, 0, nil)
	r := env.request(listTarget, env.liveToken)
	warm(b, env.handler, r, http.StatusOK)
	before := env.sim.ListRequests()
	serveLoop(b, env.handler, r, http.StatusOK)
	if env.sim.ListRequests()-before < int64(b.N) {
		b.Fatalf("%d list requests reached the PMS for %d partner requests: the cache is on",
			env.sim.ListRequests()-before, b.N)
	}
}

// httpLoop sends GET target with token to h served over loopback, from
// parallel clients each on its own keep-alive connection. The client is a
// few lines over net.Conn (pre-built request bytes, a status line and
// Content-Length read without allocating), so that the server's cost, not
// net/http's client, is what the figures compare.
func httpLoop(b *testing.B, h http.Handler, target, token string) {
	b.Helper()
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	req := "GET " + target + " HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() +
		"\r\nUser-Agent: " + benchUA + "\r\nAccept: */*\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	reqBytes := []byte(req + "\r\n")
	b.SetParallelism(4)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		br := bufio.NewReaderSize(conn, 16<<10)
		for pb.Next() {
			if _, err := conn.Write(reqBytes); err != nil {
				b.Error(err)
				return
			}
			if err := readResponse(br); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) the process has used so
// far. Per request it counts server and client alike, but, unlike wall
// time, not the other processes of a shared machine: the client's part is
// the same for the baseline and the edge (same request, same answer
// length), so the difference of two cpu-ns/op is the edge's own cost.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readResponse reads one response of status 200 with a Content-Length and
// discards it.
func readResponse(br *bufio.Reader) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q", line)
	}
	n := -1
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 { // the blank line ending the header
			break
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(name, []byte("Content-Length")) {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return err
			}
		}
	}
	if n < 0 {
		return errors.New("no Content-Length")
	}
	_, err = br.Discard(n)
	return err
}

func BenchmarkBaselineHTTP(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	res := warm(b, env.handler, env.request(listTarget, env.liveToken), http.StatusOK)
	httpLoop(b, baselineHandler(res), listTarget, "")
}

func BenchmarkCachedListHTTP(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	warm(b, env.handler, env.request(listTarget, env.liveToken), http.StatusOK)
	httpLoop(b, env.handler, listTarget, env.liveToken)
}

// TestBenchSetup keeps the benchmarks honest: through benchWriter the edge
// answers what a recorder sees (status, headers, length), and the baseline
// writes the same number of bytes and headers as the edge's list answer.
func TestBenchSetup(t *testing.T) {
	env := newBenchEnv(t, time.Hour, nil)
	r := env.request(listTarget, env.liveToken)
	res := warm(t, env.handler, r, http.StatusOK)
	w := newBenchWriter()
	env.handler.ServeHTTP(w, r)
	if w.status != http.StatusOK || w.n != res.Body.Len() {
		t.Fatalf("benchWriter saw status %d, %d bytes; recorder %d, %d bytes", w.status, w.n, res.Code, res.Body.Len())
	}
	if len(w.header) != len(res.Header()) || w.header.Get("Content-Length") != strconv.Itoa(w.n) {
		t.Fatalf("benchWriter headers %v, recorder %v", w.header, res.Header())
	}
	w.reset()
	baselineHandler(res).ServeHTTP(w, r)
	if w.status != http.StatusOK || w.n != res.Body.Len() || len(w.header) != len(res.Header()) {
		t.Fatalf("baseline: status %d, %d bytes, %d headers; edge %d bytes, %d headers",
			w.status, w.n, len(w.header), res.Body.Len(), len(res.Header()))
	}
	grantedRes := warm(t, env.handler, env.request(listTarget, env.grantedToken), http.StatusOK)
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(grantedRes.Body.Bytes(), &page); err != nil || len(page.Data) != benchGranted {
		t.Fatalf("granted key sees %d properties (%v), want %d", len(page.Data), err, benchGranted)
	}
}

// BenchmarkMissGet disables the cache (TTL 0): every request asks the
// simulator for one record over loopback, through the real pms.Client
// (retries, breaker, transport), and maps it: the miss path. The simulator
// runs in a process of its own (startSimProcess), so allocs/op counts the
// edge's allocations only.
func BenchmarkMissGet(b *testing.B) {
	env := new(benchEnv).start(b, startSimProcess(b), 0, nil)
	r := env.request("/v1/properties/"+env.activeIDs[len(env.activeIDs)/2], env.liveToken)
	warm(b, env.handler, r, http.StatusOK)
	serveLoop(b, env.handler, r, http.StatusOK)
}

func BenchmarkBaselineGetHTTP(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	target := "/v1/properties/" + env.activeIDs[len(env.activeIDs)/2]
	res := warm(b, env.handler, env.request(target, env.liveToken), http.StatusOK)
	httpLoop(b, baselineHandler(res), target, "")
}

func BenchmarkCachedGetHTTP(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	target := "/v1/properties/" + env.activeIDs[len(env.activeIDs)/2]
	warm(b, env.handler, env.request(target, env.liveToken), http.StatusOK)
	httpLoop(b, env.handler, target, env.liveToken)
}
