package bench_test

// The edge at brand scale: a brand of brandHotels hotels from the simulator,
// built as cmd/edge builds it (pmsclient.Client, pmsclient.Direct,
// upstream/cache, a key file read by keys.Store). bench/run reports the
// allocations per list page from BenchmarkBrandScaleList next to the RSS
// and the cold-start time it measures out of process, for the fast
// simulator and for a PMS of real speed (pages of 100 at 50 ms: the paced
// profile, docs/contract.md section 24).
//
//	go test -run '^$' -bench BrandScale -benchmem ./bench/
//
// BenchmarkBrandScaleColdSnapshot/paced walks 500 pages of 50 ms: one
// iteration is 25 s.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	pmsclient "github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

const (
	brand       = "aurora"
	brandHotels = 50_000
	docsURL     = "https://developer.example.com/partner-api"
	listTarget  = "/v1/properties?perPage=50"
)

// brandEnv is the edge in front of a simulator of one large brand.
type brandEnv struct {
	handler http.Handler
	token   string
	active  int
}

func newBrandEnv(tb testing.TB, hotels int) *brandEnv {
	tb.Helper()
	sim := pmsim.New(pmsim.Config{Seed: 1, Brands: 1, HotelsPerBrand: hotels})
	pms := httptest.NewServer(sim)
	tb.Cleanup(pms.Close)
	client, err := pmsclient.NewClient(pmsclient.ClientConfig{BaseURL: pms.URL, WalkAhead: true}) // as cmd/edge's live client
	if err != nil {
		tb.Fatalf("new client: %v", err)
	}
	tb.Cleanup(client.CloseIdleConnections)
	direct := pmsclient.NewDirect(client, pmsclient.DirectOptions{Brand: brand})
	c := cache.New(direct, cache.Config{Key: brand + "/live", TTL: time.Hour})
	tb.Cleanup(c.Close)
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	token, rec := keystest.Mint(tb, brand, keys.ModeLive)
	store := keystest.Open(tb, rec)
	return &brandEnv{
		handler: edge.NewServer(edge.Config{Brand: brand, DocsURL: docsURL, Healthy: store.Usable}, store, c, nil),
		token:   token,
		active:  len(snap.Active),
	}
}

func (env *brandEnv) request(target string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Header.Set("Authorization", "Bearer "+env.token)
	r.Header.Set("User-Agent", "bench/1.0")
	return r
}

// discardWriter is a reusable ResponseWriter that discards the body.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// BenchmarkBrandScaleList is one warm list page of 50 from a brand of
// brandHotels hotels: its ns, bytes and allocations per page.
func BenchmarkBrandScaleList(b *testing.B) {
	env := newBrandEnv(b, brandHotels)
	r := env.request(listTarget)
	w := &discardWriter{header: make(http.Header, 8)}
	b.ReportAllocs()
	b.ReportMetric(float64(env.active), "properties")
	for b.Loop() {
		clear(w.header)
		w.status = 0
		env.handler.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// Simulator profiles of the brand-scale check: fast (pages as large as the
// edge asks, at loopback speed) and paced (a PMS of real speed: pages of
// pacedPage hotels, each answered after pacedLatency).
const (
	pacedPage    = 100
	pacedLatency = 50 * time.Millisecond
)

// brandPMS is a simulator of hotels in profile ("fast" or "paced").
func brandPMS(tb testing.TB, hotels int, profile string) *httptest.Server {
	tb.Helper()
	cfg := pmsim.Config{Seed: 1, Brands: 1, HotelsPerBrand: hotels}
	if profile == "paced" {
		cfg.PageSize = pacedPage
	}
	sim := pmsim.New(cfg)
	if profile == "paced" {
		sim.SetFaults(pmsim.Faults{Latency: pacedLatency})
	}
	pms := httptest.NewServer(sim)
	tb.Cleanup(pms.Close)
	return pms
}

// BenchmarkBrandScaleColdSnapshot is the edge's first answer from cold at
// brand scale, in process: a new cache walks the whole brand from the
// simulator and maps it, then answers one list page; fast and paced. The
// client has cmd/edge's deadlines: a walk is bounded by its own budget
// (EDGE_PMS_WALK_TIMEOUT), never by EDGE_PMS_TIMEOUT's 9 s, which the
// paced walk of 25 s outlasts.
func BenchmarkBrandScaleColdSnapshot(b *testing.B) {
	for _, profile := range []string{"fast", "paced"} {
		b.Run(profile, func(b *testing.B) {
			pms := brandPMS(b, brandHotels, profile)
			client, err := pmsclient.NewClient(pmsclient.ClientConfig{BaseURL: pms.URL, WalkAhead: true, // as cmd/edge's live client
				CallTimeout: 9 * time.Second, AttemptTimeout: 4 * time.Second})
			if err != nil {
				b.Fatalf("new client: %v", err)
			}
			b.Cleanup(client.CloseIdleConnections)
			direct := pmsclient.NewDirect(client, pmsclient.DirectOptions{Brand: brand})
			b.ReportAllocs()
			for b.Loop() {
				c := cache.New(direct, cache.Config{Key: brand + "/live", TTL: time.Hour, LoadTimeout: 9 * time.Second})
				snap, err := c.Snapshot(context.Background())
				c.Close()
				if err != nil || len(snap.Active) == 0 {
					b.Fatalf("snapshot: %v", err)
				}
			}
		})
	}
}

// TestBrandScalePacedWalkOutlastsTheCallTimeout keeps the paced profile
// honest on a small brand: 1,200 hotels in pages of 100 at 50 ms (0.6 s)
// are walked by a client whose call deadline is 200 ms.
func TestBrandScalePacedWalkOutlastsTheCallTimeout(t *testing.T) {
	pms := brandPMS(t, 1200, "paced")
	client, err := pmsclient.NewClient(pmsclient.ClientConfig{BaseURL: pms.URL, WalkAhead: true,
		CallTimeout: 200 * time.Millisecond, AttemptTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	c := cache.New(pmsclient.NewDirect(client, pmsclient.DirectOptions{Brand: brand}),
		cache.Config{Key: brand + "/live", TTL: time.Hour, LoadTimeout: 200 * time.Millisecond})
	defer c.Close()
	snap, err := c.Snapshot(context.Background())
	if err != nil || snap.Len() < 1000 {
		t.Fatalf("paced walk: %v; want the brand's properties", err)
	}
}

// TestBrandScaleSetup keeps the benchmark honest on a small brand: the
// edge built here answers a full page of 50.
func TestBrandScaleSetup(t *testing.T) {
	env := newBrandEnv(t, 120)
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, env.request(listTarget))
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil || len(page.Data) != 50 {
		t.Fatalf("status %d, %d items; want 200 and 50: %.200s", rec.Code, len(page.Data), rec.Body.String())
	}
}
