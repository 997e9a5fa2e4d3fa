package pms

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/retrybudget"
)

// Defaults of ClientConfig.
const (
	DefaultPageSize       = 500
	DefaultMaxPages       = 1000
	DefaultMaxBodyBytes   = 8 << 20
	DefaultMaxWalkBytes   = 256 << 20
	DefaultCallTimeout    = 5 * time.Second
	DefaultWalkTimeout    = upstream.DefaultWalkTimeout
	DefaultAttemptTimeout = 2 * time.Second
	DefaultMaxRetries     = 2
	DefaultRetryWaitMin   = 100 * time.Millisecond
	DefaultRetryWaitMax   = time.Second
	DefaultRetryAfterMax  = 2 * time.Second
)

// ClientConfig configures a Client for one PMS (live or sandbox).
type ClientConfig struct {
	// BaseURL is the PMS's base address (PMS_BASE_URL or PMS_SANDBOX_URL),
	// an absolute http or https URL, optionally with a path prefix. Required.
	BaseURL string
	// Token is sent as "Authorization: Bearer <Token>" (PMS_TOKEN). Empty
	// sends no Authorization header. A partner's Authorization is never
	// forwarded: the client builds every request from scratch.
	Token string
	// Version is sent as "User-Agent: partner-edge/<Version>". Empty means
	// "dev".
	Version string

	// PageSize is the limit asked per list page, 1 to 500. Zero means
	// DefaultPageSize (500).
	PageSize int
	// MaxPages bounds one list walk; a longer walk is a failure (a PMS
	// that never ends its cursor chain). Zero means DefaultMaxPages (1000).
	MaxPages int
	// MaxBodyBytes bounds each response body; a larger body is a failure.
	// Zero means DefaultMaxBodyBytes (8 MiB).
	MaxBodyBytes int64
	// MaxWalkBytes bounds the bodies of one list walk together
	// (EDGE_PMS_MAX_WALK_BYTES, docs/contract.md section 15): MaxPages x MaxBodyBytes
	// alone allows about 8 GiB. A longer walk is a failure. Zero means
	// DefaultMaxWalkBytes (256 MiB).
	MaxWalkBytes int64

	// ReadBytesPerSecond paces list walks: each page waits for its share
	// of this rate before its records are decoded, which bounds the CPU a
	// walk takes from everything else (the shadow candidate, docs/contract.md
	// 17). Zero means unpaced (the live PMS: partners wait on it).
	ReadBytesPerSecond int64
	// WalkAhead makes an unpaced list walk fetch the next page while it
	// hands over the records of this one (walk.go, fetchAhead): the PMS's work
	// and the edge's overlap, and the walk holds two pages instead of one
	// (the live edge's cold start, docs/resilience.md). False (the zero
	// value) means one page at a time; a paced walk never fetches ahead.
	WalkAhead bool

	// CallTimeout is the overall deadline of one get (GetHotel): every
	// attempt, every retry wait. The caller's own deadline applies too
	// when it is earlier. Zero means DefaultCallTimeout (5 s).
	CallTimeout time.Duration
	// WalkTimeout is the budget of one list walk (WalkHotels: every page,
	// every attempt and retry wait of each; EDGE_PMS_WALK_TIMEOUT,
	// docs/contract.md section 24): a walk is a background load, not a
	// partner's call, so CallTimeout does not bound it. The caller's own
	// deadline applies too when it is earlier (a walk with EDGE_CACHE_TTL=0
	// is a partner's call: the cache gives it CallTimeout). Zero means
	// DefaultWalkTimeout (10 min).
	WalkTimeout time.Duration
	// AttemptTimeout bounds one HTTP attempt, reading the body included.
	// Zero means DefaultAttemptTimeout (2 s).
	AttemptTimeout time.Duration

	// Retry configures retries of failed attempts.
	Retry RetryConfig
	// Breaker configures the circuit breaker around each HTTP request with
	// its retries (a get, or one page of a walk).
	Breaker BreakerConfig

	// Transport sends each attempt. Nil means a new NewTransport(), for an
	// http and an https BaseURL alike: net/http's Transport, tuned for a
	// PMS (docs/resilience.md, "Transport"); for http its connections are
	// also checked for stray bytes before they are reused (idleguard.go).
	// When it is an *http.Transport, an answer that must be confirmed is
	// asked again through a copy of it without keep-alive (a new
	// connection, confirm.go); any other RoundTripper is used as is.
	// Client.CloseIdleConnections closes its idle connections if it has a
	// CloseIdleConnections method.
	Transport http.RoundTripper
	// guardable: Transport is the default one, the client's own, whose
	// connections the idle guard may watch.
	guardable bool
	// WrapTransport, when set, is called once by NewClient with Transport
	// and its result sends the attempts instead, while
	// Client.CloseIdleConnections still reaches Transport itself. It is
	// the place for a tracing wrapper such as
	//
	//	func(rt http.RoundTripper) http.RoundTripper {
	//		return tel.Transport(rt, upstream.ResendCount)
	//	}
	//
	// because otelhttp's transport does not forward CloseIdleConnections:
	// set as Transport, it would leave the pool unreachable. Each attempt's
	// request context carries the logical call's span (see Tracer), so the
	// wrapper's client spans are that span's children. Nil: Transport
	// sends the attempts as is.
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// Tracer starts one span per logical call (SpanListHotels,
	// SpanGetHotel; see Client). Nil means no call spans, and no work
	// for them (the caller's context is passed on as it is): attempt spans
	// of a tracing WrapTransport are then children of whatever span the
	// caller's context holds.
	Tracer trace.Tracer
	// Metrics records every attempt (duration and outcome), every retry,
	// every refused answer and every breaker state change of this PMS, and
	// adds "pms.retry" events to the call span. Nil means none.
	Metrics *upstream.PMSMetrics

	// Now is the client's clock: Retry-After dates, the breaker's open
	// time, the hold after PMS shedding, attempt durations and, when
	// Retry.Budget is nil, the retry budget. Nil means time.Now. (Waits
	// themselves are timers, and a retry's wait is checked against the
	// call's deadline on time.Now's clock, the deadline's own: a test that
	// gives the client a clock on its fixed day keeps its deadlines; tests
	// run the waits under testing/synctest.)
	Now func() time.Time

	// Logger receives breaker state changes (info), failed attempts and
	// retry decisions (debug, by class) and refused answers (warn: once per
	// walk, for gets at most every 10 s). Nothing it receives quotes the
	// PMS. Nil means no logging.
	Logger *slog.Logger
}

// RetryConfig configures retries of one HTTP request (a get, or one list
// page). Connection failures, per-attempt timeouts and statuses 408 (on a
// new connection), 429, 500, 502, 503 and 504 are retried; nothing else.
type RetryConfig struct {
	// MaxRetries is the number of retries after the first attempt. Zero
	// means DefaultMaxRetries (2, so 3 attempts); negative means none.
	MaxRetries int
	// WaitMin is the base of the exponential backoff: the wait before
	// retry n is uniformly random in [0, min(WaitMax, WaitMin*2^n)] (full
	// jitter). Zero means DefaultRetryWaitMin (100 ms).
	WaitMin time.Duration
	// WaitMax caps the backoff. Zero means DefaultRetryWaitMax (1 s).
	WaitMax time.Duration
	// RetryAfterMax is the longest Retry-After (on 429 and 503) the client
	// waits for. The PMS's Retry-After is honoured as a minimum wait; when
	// it is longer than RetryAfterMax, or would end after the call's
	// deadline, the client does not retry and fails at once. Zero means
	// DefaultRetryAfterMax (2 s).
	RetryAfterMax time.Duration
	// Budget limits retries across all calls of the client. Nil means
	// retrybudget.New(retrybudget.Config{}) (20% of recent requests, at least 10
	// per second).
	Budget *retrybudget.Budget
}

// withDefaults returns cfg with zero values replaced by defaults, or an
// error naming the first bad setting.
func (cfg ClientConfig) withDefaults() (ClientConfig, *url.URL, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		// Not echoed: it may hold a password or a token (docs/contract.md section 15).
		return cfg, nil, errors.New("upstream: BaseURL: want an absolute http or https URL without query or fragment")
	}
	cfg.Version = cmp.Or(cfg.Version, "dev")
	cfg.PageSize = cmp.Or(cfg.PageSize, DefaultPageSize)
	if cfg.PageSize < 1 || cfg.PageSize > 500 {
		return cfg, nil, fmt.Errorf("upstream: PageSize %d: want 1 to 500", cfg.PageSize)
	}
	cfg.MaxPages = cmp.Or(cfg.MaxPages, DefaultMaxPages)
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.MaxWalkBytes = cmp.Or(cfg.MaxWalkBytes, DefaultMaxWalkBytes)
	cfg.CallTimeout = cmp.Or(cfg.CallTimeout, DefaultCallTimeout)
	cfg.WalkTimeout = cmp.Or(cfg.WalkTimeout, DefaultWalkTimeout)
	cfg.AttemptTimeout = cmp.Or(cfg.AttemptTimeout, DefaultAttemptTimeout)
	r := &cfg.Retry
	r.MaxRetries = max(cmp.Or(r.MaxRetries, DefaultMaxRetries), 0) // negative: none
	r.WaitMin = cmp.Or(r.WaitMin, DefaultRetryWaitMin)
	r.WaitMax = cmp.Or(r.WaitMax, DefaultRetryWaitMax)
	r.RetryAfterMax = cmp.Or(r.RetryAfterMax, DefaultRetryAfterMax)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if r.Budget == nil {
		r.Budget = retrybudget.New(retrybudget.Config{Now: cfg.Now})
	}
	for _, s := range []struct {
		name string
		v    int64
	}{
		{"MaxPages", int64(cfg.MaxPages)}, {"MaxBodyBytes", cfg.MaxBodyBytes}, {"MaxWalkBytes", cfg.MaxWalkBytes},
		{"ReadBytesPerSecond", cfg.ReadBytesPerSecond},
		{"CallTimeout", int64(cfg.CallTimeout)}, {"WalkTimeout", int64(cfg.WalkTimeout)}, {"AttemptTimeout", int64(cfg.AttemptTimeout)},
		{"Retry.WaitMin", int64(r.WaitMin)}, {"Retry.WaitMax", int64(r.WaitMax)},
		{"Retry.RetryAfterMax", int64(r.RetryAfterMax)},
	} {
		if s.v < 0 {
			return cfg, nil, fmt.Errorf("upstream: %s must not be negative", s.name)
		}
	}
	if cfg.Breaker, err = cfg.Breaker.withDefaults(); err != nil {
		return cfg, nil, err
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Tracer == nil {
		cfg.Tracer = tracenoop.NewTracerProvider().Tracer("")
	}
	if cfg.Transport == nil {
		cfg.Transport, cfg.guardable = NewTransport(), true
	}
	return cfg, u, nil
}
