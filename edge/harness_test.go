package edge_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/internal/openapitest"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"go.opentelemetry.io/otel/trace"
)

const (
	testBrand   = "aurora"
	testDocsURL = "https://developer.example.com/partner-api"
)

// testKey is one key of the harness's key file.
type testKey struct {
	name, token string
	record      map[string]any
}

// harness is the edge over real HTTP, in front of simulators on loopback.
type harness struct {
	t        testing.TB
	srv      *httptest.Server
	live     *pmsim.Sim
	sandbox  *pmsim.Sim        // nil when the deployment has no sandbox
	keys     map[string]string // name -> token
	store    *keys.Store
	logs     *testkit.LogBuffer
	keysFile string
	feeds    edge.Feeds // the events feeds, watching the catalogs
}

type harnessOptions struct {
	noSandbox bool
	pageSize  int // forces the simulator's page size
	catalogs  func(live, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog)
	// now is the clock of every component the harness builds (the edge,
	// the feeds, the walks' stamps; the PMS clients get one moving on from
	// it). Nil: testkit.Epoch's day, moving with the wall clock, so no test
	// reads the calendar (docs/testing.md, "Time in tests"); a test that
	// wraps the catalogs in a cache gives it the same clock.
	now func() time.Time
	// tel traces the edge and its PMS attempts; simTel the simulators.
	tel, simTel *observability.Telemetry
	rateLimit   ratelimit.Limit
	// authFailLimit, trustedProxies and limiter are the Config fields;
	// wrapKeys, when set, wraps the key store the edge sees; keyOver
	// overrides fields of named keys' records.
	authFailLimit  int
	trustedProxies string
	limiter        ratelimit.Limiter
	wrapKeys       func(edge.KeyStore) edge.KeyStore
	keyOver        map[string]map[string]any
	// pmsCallTimeout, when set, replaces the short PMS call deadline the
	// failure tests want (for tests that load under heavy concurrency).
	pmsCallTimeout time.Duration
	// accessLogSample is Config.AccessLogSample.
	accessLogSample float64
	// maxConcurrent is Config.MaxConcurrent (0: no shedding).
	maxConcurrent int
	// oauth turns access tokens on; its Clients, when nil, is the
	// harness's key store (records get a clientId through keyOver).
	oauth *edge.OAuth
	// webhooks and webhookAllowHTTP are the Config fields.
	webhooks         webhooks.Registry
	webhookAllowHTTP bool
}

func newHarness(t testing.TB, opts harnessOptions) *harness {
	t.Helper()
	h := &harness{t: t, keys: map[string]string{}, logs: &testkit.LogBuffer{}}
	if opts.now == nil {
		opts.now = testkit.From(testkit.Epoch)
	}
	h.live = pmsim.New(pmsim.Config{Seed: 1, HotelsPerBrand: 40, PageSize: opts.pageSize})
	liveSrv := httptest.NewServer(instrument(h.live, opts.simTel))
	t.Cleanup(liveSrv.Close)
	liveCat := newCatalog(t, liveSrv.URL, opts.tel, opts.pmsCallTimeout, opts.now)
	var sandboxCat upstream.Catalog
	if !opts.noSandbox {
		h.sandbox = pmsim.New(pmsim.Config{Seed: 2, HotelsPerBrand: 12, PageSize: opts.pageSize})
		sbSrv := httptest.NewServer(instrument(h.sandbox, opts.simTel))
		t.Cleanup(sbSrv.Close)
		sandboxCat = newCatalog(t, sbSrv.URL, opts.tel, opts.pmsCallTimeout, opts.now)
	}
	if opts.catalogs != nil {
		liveCat, sandboxCat = opts.catalogs(liveCat, sandboxCat)
	}
	var feeds edge.Feeds
	liveCat, feeds.Live = watch(t, liveCat, "live", opts.now)
	sandboxCat, feeds.Sandbox = watch(t, sandboxCat, "test", opts.now)
	h.feeds = feeds

	granted := activeIDs(t, h.live, testBrand)[:3]
	ks := []testKey{
		h.key("live", "live", opts.keyOver["live"]),
		h.key("test", "test", opts.keyOver["test"]),
		h.key("granted", "live", map[string]any{"properties": granted}),
		h.key("suspended", "live", map[string]any{"status": "suspended"}),
		h.key("expired", "live", map[string]any{"expiresAt": "2020-01-01T00:00:00Z"}),
		h.key("future", "live", map[string]any{"expiresAt": "2999-01-01T00:00:00Z"}),
		h.key("otherbrand", "live", map[string]any{"brand": "borealis"}),
		h.key("noscope", "live", map[string]any{"scopes": []string{"guests:read"}}),
		h.key("noscopes", "live", map[string]any{"scopes": nil}),
	}
	for _, k := range ks[2:] { // keyOver names any key, not only live and test
		for f, v := range opts.keyOver[k.name] {
			k.record[f] = v
		}
	}
	h.keysFile = filepath.Join(t.TempDir(), "keys.json")
	writeKeyFile(t, h.keysFile, ks)
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store, err := keys.Open(h.keysFile, keys.Options{Logger: logger})
	if err != nil {
		t.Fatalf("open keys: %v", err)
	}
	h.store = store
	trusted, err := edge.ParseTrustedProxies(opts.trustedProxies)
	if err != nil {
		t.Fatal(err)
	}
	cfg := edge.Config{Brand: testBrand, DocsURL: testDocsURL, Logger: logger, Now: opts.now, Healthy: store.Usable, Telemetry: opts.tel,
		RateLimit: opts.rateLimit, AuthFailLimit: opts.authFailLimit, TrustedProxies: trusted, Limiter: opts.limiter,
		AccessLogSample: opts.accessLogSample, MaxConcurrent: opts.maxConcurrent, Events: feeds,
		Webhooks: opts.webhooks, WebhookAllowHTTP: opts.webhookAllowHTTP}
	if opts.oauth != nil {
		o := *opts.oauth
		if o.Clients == nil {
			o.Clients = store
		}
		cfg.OAuth = &o
	}
	var ks2 edge.KeyStore = store
	if opts.wrapKeys != nil {
		ks2 = opts.wrapKeys(store)
	}
	h.srv = httptest.NewServer(edge.NewServer(cfg, ks2, liveCat, sandboxCat))
	t.Cleanup(h.srv.Close)
	return h
}

// instrument gives the simulator its own server spans, as cmd/pmsim does.
func instrument(h http.Handler, tel *observability.Telemetry) http.Handler {
	if tel == nil {
		return h
	}
	return pmsim.Instrument(h, tel)
}

// watched is a catalog whose snapshots its events feed observes, as the
// cache's load is watched in cmd/edge (events.Feed.Watch): here every list
// is a walk of the simulator.
type watched struct {
	upstream.Catalog
	load events.Loader
}

func (w watched) Snapshot(ctx context.Context) (*upstream.Snapshot, error) { return w.load(ctx) }

// Await is the watched catalog's, if it walks on the clock
// (upstream.Awaiter); nil otherwise.
func (w watched) Await(ctx context.Context) error {
	if a, ok := w.Catalog.(upstream.Awaiter); ok {
		return a.Await(ctx)
	}
	return nil
}

// watch returns c watched by a new feed of mode (nil and nil for no c).
func watch(t testing.TB, c upstream.Catalog, mode string, now func() time.Time) (upstream.Catalog, *events.Feed) {
	t.Helper()
	if c == nil {
		return nil, nil
	}
	f, err := events.New(events.Config{Mode: mode, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return watched{Catalog: c, load: f.Watch(c.Snapshot)}, f
}

// newCatalog is the PMS at baseURL through a client and Direct as cmd/edge
// builds them: the walks are stamped by now, and the client's clock starts
// at now's reading and moves on from it (a stopped test clock would freeze
// its breaker and retry budget).
func newCatalog(t testing.TB, baseURL string, tel *observability.Telemetry, callTimeout time.Duration, now func() time.Time) upstream.Catalog {
	t.Helper()
	var wrap func(http.RoundTripper) http.RoundTripper
	var tracer trace.Tracer
	if tel != nil {
		wrap = func(rt http.RoundTripper) http.RoundTripper { return tel.Transport(rt, pms.ResendCount) }
		tracer = tel.Tracer()
	}
	// Short deadlines and a small breaker keep the failure tests fast.
	if callTimeout == 0 {
		callTimeout = 600 * time.Millisecond
	}
	c, err := pms.NewClient(pms.ClientConfig{
		BaseURL:        baseURL,
		Now:            testkit.From(now()),
		WrapTransport:  wrap,
		Tracer:         tracer,
		CallTimeout:    callTimeout,
		AttemptTimeout: 250 * time.Millisecond,
		Retry:          pms.RetryConfig{WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond},
		Breaker:        pms.BreakerConfig{ConsecutiveFailures: 3, OpenTimeout: 30 * time.Second},
	})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return pms.NewDirect(c, pms.DirectOptions{Brand: testBrand, Now: now})
}

// key makes a key named name with a record overridden by over; a nil value
// in over deletes the field.
func (h *harness) key(name, mode string, over map[string]any) testKey {
	token := "svc_" + mode + "_" + randomAlnum(h.t, 32)
	digest := keys.Digest(token)
	rec := map[string]any{
		"id": "key_" + name, "partner": "Partner " + name, "sha256": hex.EncodeToString(digest[:]),
		"brand": testBrand, "mode": mode, "properties": []string{"*"}, "status": "active",
		"expiresAt": nil, "scopes": []string{"properties:read"},
	}
	for k, v := range over {
		if v == nil {
			delete(rec, k)
			continue
		}
		rec[k] = v
	}
	h.keys[name] = token
	return testKey{name: name, token: token, record: rec}
}

func writeKeyFile(t testing.TB, path string, ks []testKey) {
	t.Helper()
	recs := make([]map[string]any, len(ks))
	for i, k := range ks {
		recs[i] = k.record
	}
	keystest.Write(t, path, recs...)
}

func randomAlnum(t testing.TB, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// request is one call to the edge. Headers are raw lines; a nil value in
// headers means "send no such header" for the defaults (key, User-Agent).
type request struct {
	method  string
	path    string // path and query, sent verbatim
	key     string // key name; "" sends no Authorization
	headers map[string][]string
	body    io.Reader
	noUA    bool
	from    string // local loopback address to send from (127.0.0.2...); "" the default
}

type response struct {
	status int
	header http.Header
	body   []byte // decoded, when the answer came with a Content-Encoding
	raw    []byte // as sent
}

// do sends req and checks what every response must satisfy: Svc-Request-Id
// of the right form, Cache-Control and nosniff, and the OpenAPI document.
func (h *harness) do(req request) response {
	h.t.Helper()
	if req.method == "" {
		req.method = http.MethodGet
	}
	r, err := http.NewRequest(req.method, h.srv.URL+req.path, req.body)
	if err != nil {
		h.t.Fatalf("new request: %v", err)
	}
	if req.key != "" {
		token, ok := h.keys[req.key]
		if !ok {
			token = req.key
		}
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if !req.noUA {
		r.Header.Set("User-Agent", "harness/1.0")
	} else {
		r.Header["User-Agent"] = nil // net/http then sends no User-Agent at all
	}
	for k, vs := range req.headers {
		r.Header[k] = vs
	}
	client := h.srv.Client()
	if req.from != "" {
		client = clientFrom(h.t, req.from)
	}
	res, err := client.Do(r)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.method, req.path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatalf("read body: %v", err)
	}
	out := response{status: res.StatusCode, header: res.Header, body: body, raw: body}
	if ce := res.Header.Get("Content-Encoding"); ce != "" {
		out.body = testkit.DecodeBody(h.t, ce, body)
		body = out.body
	}
	checkCommon(h.t, req, out)
	recordCode(body)
	if req.method != http.MethodHead {
		if err := openapitest.Contract(h.t).CheckResponse(r, res, body); err != nil {
			h.t.Errorf("%s %s: response does not match docs/openapi.yaml: %v\n%s", req.method, req.path, err, short(body))
		}
	}
	return out
}

var requestIDPattern = regexp.MustCompile(`^req_[A-Za-z0-9]{16,64}$`)

func checkCommon(t testing.TB, req request, res response) {
	t.Helper()
	if id := res.header.Values("Svc-Request-Id"); len(id) != 1 || !requestIDPattern.MatchString(id[0]) {
		t.Errorf("%s %s: Svc-Request-Id = %q", req.method, req.path, id)
	}
	if got := res.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("%s %s: Cache-Control = %q, want no-store", req.method, req.path, got)
	}
	if got := res.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s %s: X-Content-Type-Options = %q, want nosniff", req.method, req.path, got)
	}
}

var timestampPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// problemBody is a decoded problem+json body.
type problemBody struct {
	Type      string               `json:"type"`
	Title     string               `json:"title"`
	Status    int                  `json:"status"`
	Detail    string               `json:"detail"`
	MoreInfo  string               `json:"moreInfo"`
	Instance  string               `json:"instance"`
	Code      string               `json:"code"`
	Errors    []problem.FieldError `json:"errors"`
	RequestID string               `json:"requestId"`
	Timestamp string               `json:"timestamp"`
}

// wantProblem checks res is the problem code with every field of
// docs/partner-api.md section 2.6 present and consistent, and returns it.
func wantProblem(t testing.TB, req request, res response, code problem.Code) problemBody {
	t.Helper()
	entry := problem.Lookup(code)
	where := req.method + " " + req.path
	if res.status != entry.Status {
		t.Errorf("%s: status %d, want %d (%s)\n%s", where, res.status, entry.Status, code, short(res.body))
	}
	if ct := res.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: Content-Type %q", where, ct)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(res.body, &fields); err != nil {
		t.Fatalf("%s: body is not JSON: %v\n%s", where, err, short(res.body))
	}
	for _, f := range []string{"type", "title", "status", "detail", "moreInfo", "instance", "code", "errors", "requestId", "timestamp"} {
		if _, ok := fields[f]; !ok {
			t.Fatalf("%s: problem lacks %q: %s", where, f, short(res.body))
		}
	}
	if len(fields) != 10 {
		t.Errorf("%s: problem has %d fields, want 10: %s", where, len(fields), short(res.body))
	}
	var p problemBody
	if err := json.Unmarshal(res.body, &p); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	path, _, _ := strings.Cut(req.path, "?")
	switch {
	case p.Code != string(code):
		t.Errorf("%s: code %s, want %s\n%s", where, p.Code, code, short(res.body))
	case p.Status != entry.Status:
		t.Errorf("%s: status field %d", where, p.Status)
	case p.Title != entry.Title:
		t.Errorf("%s: title %q, want %q", where, p.Title, entry.Title)
	case p.Type != problem.TypeURI(testDocsURL, code):
		t.Errorf("%s: type %q", where, p.Type)
	case p.Instance != path:
		t.Errorf("%s: instance %q, want %q", where, p.Instance, path)
	case p.RequestID != res.header.Get("Svc-Request-Id"):
		t.Errorf("%s: requestId %q != header %q", where, p.RequestID, res.header.Get("Svc-Request-Id"))
	case !timestampPattern.MatchString(p.Timestamp):
		t.Errorf("%s: timestamp %q", where, p.Timestamp)
	case p.Detail == "" || p.Errors == nil:
		t.Errorf("%s: empty detail or null errors: %s", where, short(res.body))
	}
	return p
}

// envelope is a decoded success body.
type envelope struct {
	Data json.RawMessage `json:"data"`
	Meta struct {
		RequestID  string `json:"requestId"`
		Timestamp  string `json:"timestamp"`
		Pagination *struct {
			Page    int `json:"page"`
			PerPage int `json:"perPage"`
			Total   int `json:"total"`
		} `json:"pagination"`
	} `json:"meta"`
}

func wantOK(t testing.TB, req request, res response) envelope {
	t.Helper()
	if res.status != http.StatusOK {
		t.Fatalf("%s %s: status %d, want 200\n%s", req.method, req.path, res.status, short(res.body))
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", req.method, req.path, ct)
	}
	var env envelope
	if err := json.Unmarshal(res.body, &env); err != nil {
		t.Fatalf("%s %s: %v\n%s", req.method, req.path, err, short(res.body))
	}
	if env.Meta.RequestID != res.header.Get("Svc-Request-Id") {
		t.Errorf("meta.requestId %q != header %q", env.Meta.RequestID, res.header.Get("Svc-Request-Id"))
	}
	if !timestampPattern.MatchString(env.Meta.Timestamp) {
		t.Errorf("meta.timestamp %q", env.Meta.Timestamp)
	}
	return env
}

// activeIDs returns the ids of the brand's mappable active properties in
// list order (createdAt, then id), computed from the simulator's records.
func activeIDs(t testing.TB, sim *pmsim.Sim, brand string) []string {
	t.Helper()
	return expectedList(t, sim, brand).ids
}

// short keeps failure messages readable.
func short(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// rawRequest sends head (request line and headers, without the final blank
// line) on a fresh connection, for what net/http's client refuses to send,
// and returns the raw response.
func (h *harness) rawRequest(head, body string) string {
	h.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, head+"Connection: close\r\n\r\n"+body); err != nil {
		h.t.Fatal(err)
	}
	b, _ := io.ReadAll(conn)
	recordCode(b[bytes.Index(b, []byte("\r\n\r\n"))+4:])
	return string(b)
}
