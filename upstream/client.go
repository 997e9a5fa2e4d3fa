package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
)

// Client calls one PMS (docs/pms-api.md) with the resilience of docs/resilience.md.
// Errors are *Error: NotFound from GetHotel on a PMS 404; BadGateway,
// Timeout or Unavailable when the PMS fails or sheds load; Canceled when
// the caller left. Each call runs through, outermost first:
//
//  1. its deadline: a get's CallTimeout, a walk's WalkTimeout (a walk is
//     a background load with a budget of its own, docs/contract.md
//     section 24), or the caller's if earlier: it bounds everything below,
//     retry waits included;
//  2. the circuit breaker, around each HTTP request with its retries (a
//     get, or one page of a walk): while open, the request fails at once
//     with no PMS traffic and no retries, and a walk ends with it; one
//     request, whatever its retries, is one outcome for the breaker;
//  3. retries (per HTTP request), with backoff, Retry-After and the
//     shared retry budget;
//  4. the transport: one attempt, bounded by AttemptTimeout and
//     MaxBodyBytes.
//
// With ClientConfig.Tracer, each logical call has one span (SpanListHotels
// or SpanGetHotel) around all of this, and each attempt's request context
// carries it, so a tracing WrapTransport makes the attempt spans its
// children. With ClientConfig.Metrics, every attempt, retry and breaker
// change is recorded.
//
// PMS shedding (docs/contract.md section 10): a 503 or 429 whose Retry-After the call
// cannot wait out fails the call as Unavailable with that Retry-After
// (clamped to 1..60 s), and no call is made to this PMS before it has
// passed.
//
// A Client is safe for concurrent use. It starts no goroutines of its own;
// the transport's connection goroutines end with CloseIdleConnections or
// the idle timeout.
type Client struct {
	cfg     ClientConfig // defaults applied (withDefaults)
	base    string       // base URL without trailing slash
	http    *http.Client
	breaker *breaker
	// Header values sent on every request, built once (setHeaders).
	userAgent, authorization []string
	// retryLog is log as retryablehttp's logger, boxed once.
	retryLog retryablehttp.LeveledLogger
	// attemptsPool holds *attempts, each with its retryablehttp.Client:
	// the retry machinery is built once, not per call (retry.go).
	attemptsPool sync.Pool
	// heldUntil (unix nanoseconds of now) is when the PMS may be called
	// again after it shed load; zero or past: not held.
	heldUntil atomic.Int64
	// pace spaces list pages (ReadBytesPerSecond); nil: not paced.
	pace *rate.Limiter
	// spans: ClientConfig.Tracer was set. Without it a call starts no span
	// at all, not even a no-op one (a context per call).
	spans bool
}

// NewClient returns a client for cfg, or an error naming a bad setting.
func NewClient(cfg ClientConfig) (*Client, error) {
	spans := cfg.Tracer != nil
	cfg, u, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	send := cfg.Transport
	if cfg.WrapTransport != nil {
		if send = cfg.WrapTransport(cfg.Transport); send == nil {
			return nil, errors.New("upstream: WrapTransport returned nil")
		}
	}
	c := &Client{
		cfg:  cfg,
		base: strings.TrimRight(u.String(), "/"),
		http: &http.Client{
			// AttemptTimeout is roundTripOnly's: no Timeout here.
			Transport: roundTripOnly{rt: send, timeout: cfg.AttemptTimeout, guarded: cfg.guarded},
			// The PMS does not redirect; following one could carry the
			// token elsewhere. A 3xx is an unexpected status.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		spans:     spans,
		retryLog:  retryLogger{cfg.Logger},
		userAgent: []string{"partner-edge/" + cfg.Version},
	}
	if cfg.Token != "" {
		c.authorization = []string{"Bearer " + cfg.Token}
	}
	if cfg.ReadBytesPerSecond > 0 {
		// Burst: one page of the largest size, so a page never waits for
		// more than the rate allows and WaitN never refuses one.
		c.pace = rate.NewLimiter(rate.Limit(cfg.ReadBytesPerSecond), int(cfg.MaxBodyBytes)+1)
	}
	c.breaker = newBreaker("pms "+u.Host, cfg.Breaker, cfg.Logger, cfg.Metrics, cfg.Now)
	return c, nil
}

// BreakerState is the circuit breaker's state: "closed", "half-open" or
// "open".
func (c *Client) BreakerState() string { return c.breaker.State() }

// CloseIdleConnections closes the idle connections of ClientConfig.Transport
// (not of the WrapTransport wrapper, which need not forward the call), if
// it has a CloseIdleConnections method.
func (c *Client) CloseIdleConnections() {
	if ci, ok := c.cfg.Transport.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// setHeaders sets the headers of a PMS request. h is a fresh header of
// retryablehttp's request: the names are set in canonical form without
// Set's canonicalisation, and the constant values are shared, built once
// by NewClient (net/http only reads them).
func (c *Client) setHeaders(ctx context.Context, h http.Header) {
	h["Accept"] = acceptJSON
	h["User-Agent"] = c.userAgent
	if c.authorization != nil {
		h["Authorization"] = c.authorization
	}
	ids := CallerIDsFrom(ctx)
	if ids.RequestID != "" {
		h["X-Request-Id"] = []string{ids.RequestID}
	}
	if ids.CorrelationID != "" {
		h["X-Correlation-Id"] = []string{ids.CorrelationID}
	}
}

var acceptJSON = []string{"application/json"}

// call runs fn as one get: under the call deadline and through the
// breaker, unless the PMS shed load and its Retry-After has not passed. It
// classifies the failure for the caller and records it on span, the call's
// span, which ctx carries.
func (c *Client) call(ctx context.Context, span trace.Span, fn func(ctx context.Context) error) error {
	cctx, cancel := withBudget(ctx, c.cfg.CallTimeout)
	defer cancel()
	err := c.guarded(ctx, func() error { return fn(cctx) })
	if err == nil {
		return nil
	}
	e := Classify(cctx, err, BadGateway)
	endCall(span, err, e)
	return e
}

// withBudget is ctx under a deadline d from now, unless ctx's own is
// earlier: a cache load or a partner's request already bounds most calls,
// and a context here would only add a layer and its cancellation.
func withBudget(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// guarded runs fn, one HTTP request with its retries, through the breaker,
// unless the PMS shed load and its Retry-After has not passed (a
// *heldError, no request made). A failure of fn while ctx, the caller's
// context, was cancelled is not the PMS's and is not counted
// (callerGoneError); a PMS that shed load is held (Client.hold).
func (c *Client) guarded(ctx context.Context, fn func() error) error {
	if wait := c.heldFor(); wait > 0 {
		return &heldError{wait: wait}
	}
	err := c.breaker.execute(func() error {
		err := fn()
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			return &callerGoneError{err: err}
		}
		return err
	})
	if se := (*sheddingError)(nil); errors.As(err, &se) {
		c.hold(se.wait)
	}
	return err
}

// hold keeps every call away from the PMS for d from now.
func (c *Client) hold(d time.Duration) {
	until := c.cfg.Now().Add(d).UnixNano()
	for {
		cur := c.heldUntil.Load()
		if cur >= until || c.heldUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// heldFor is how long calls are still held back (0: not held), at least one
// second while held.
func (c *Client) heldFor() time.Duration {
	until := c.heldUntil.Load()
	if until == 0 {
		return 0
	}
	d := time.Duration(until - c.cfg.Now().UnixNano())
	if d <= 0 {
		return 0
	}
	return max(d, time.Second)
}

// hotelsURL is the list address of brand, or of one hotel when id is set.
func (c *Client) hotelsURL(brand, id string) string {
	if id != "" { // one concatenation, one string
		return c.base + "/internal/v2/brands/" + url.PathEscape(brand) + "/hotels/" + url.PathEscape(id)
	}
	return c.base + "/internal/v2/brands/" + url.PathEscape(brand) + "/hotels"
}

// listPage is the list envelope. A pointer tells a missing nextCursor from
// null; hotels says whether it was there (and not null) itself.
type listPage struct {
	Hotels     hotelsField `json:"hotels"`
	NextCursor *string     `json:"nextCursor"`
}

// hotelsField is the hotels array of a page: set when present and not
// null; recs is reused from page to page, so a walk's garbage stays small
// (the records themselves are slices of the page's buffer: bodySlice).
type hotelsField struct {
	set  bool
	recs []bodySlice
}

func (h *hotelsField) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	h.recs, h.set = h.recs[:0], true // on an error the page fails whole
	return json.Unmarshal(data, &h.recs)
}

// bodySlice is a record as a slice of the page body it came in, not a copy
// (json.RawMessage copies): a page's records cost no garbage of their
// size. encoding/json hands UnmarshalJSON a slice of its input, which the
// walk owns and reuses only for the next page, after every record of this
// one was handed over. This is the fallback of a page the one-pass
// decoder (walkpage.go) does not take.
type bodySlice []byte

func (b *bodySlice) UnmarshalJSON(data []byte) error { *b = data; return nil }

// yieldEvery is how many records a paced walk maps between two yields of
// its processor.
const yieldEvery = 64

// ErrWalkOverBound is the cause (errors.Is) of a walk that passed its
// bound (ClientConfig.MaxWalkBytes), in bytes sent or in bytes kept.
var ErrWalkOverBound = errors.New("list walk over its bound")

// OverBound is the error of a walk that keeps more than its bound of what
// it made of the records (a BadGateway *Error whose cause is
// ErrWalkOverBound): for a RecordWalker's visit.
func OverBound(bound int64) error {
	return &Error{Kind: BadGateway, Err: &answerError{
		reason: fmt.Sprintf("list walk keeps more than %d bytes", bound), err: ErrWalkOverBound}}
}

// MaxWalkBytes is the bound of one list walk (ClientConfig.MaxWalkBytes):
// on the bytes the PMS sends, and on what a walk's caller keeps of them.
func (c *Client) MaxWalkBytes() int64 { return c.cfg.MaxWalkBytes }

// WalkHotels hands every record of brand to visit, following nextCursor to
// the last page, so the caller keeps only what it makes of the records
// (docs/contract.md section 17). rec is valid only during the call (the
// page's buffer is reused); an error of visit ends the walk with that
// error (an *Error as is, anything else as BadGateway). A cursor seen
// twice in one walk, an empty cursor, more
// than MaxPages pages or more than MaxWalkBytes of bodies is a failure
// (BAD_GATEWAY): the PMS would never end.
//
// Budget (docs/contract.md section 24): the walk runs under WalkTimeout
// (or ctx's deadline, when earlier), never CallTimeout; each page is one
// HTTP request with its own retries (backoff, Retry-After, the retry
// budget), each attempt under AttemptTimeout, and one outcome for the
// breaker. A page that still fails after its retries, or that the open
// breaker or a PMS's Retry-After refuses, fails the walk: the caller keeps
// what it had (the cache's previous snapshot). ctx may carry a WalkStats
// (pages and records are counted into it) and an OnPage hook.
//
// Memory: each page is read into one buffer, reused from page to page,
// and its records are handed over as slices of it; the walk itself keeps
// one page (at most MaxBodyBytes, in a buffer of up to twice that while
// it grows) and the page's record index, whatever the number of pages;
// two with ClientConfig.WalkAhead, the one handed over and the next,
// fetched meanwhile (walkahead.go). With ClientConfig.ReadBytesPerSecond,
// each page waits for its share of that rate before its records are
// decoded, the walk yields its processor every yieldEvery records (a
// background walk's bounded CPU: the shadow candidate), and it fetches no
// page ahead.
func (c *Client) WalkHotels(ctx context.Context, brand string, visit func(rec []byte) error) error {
	ctx, span := c.startCall(ctx, SpanListHotels, brand, "")
	defer span.End()
	ctx, cancel := withBudget(ctx, c.cfg.WalkTimeout)
	defer cancel()
	w := walk{c: c, brand: brand, visit: visit, stats: WalkStatsFrom(ctx), onPage: pageHookFrom(ctx)}
	err := w.run(ctx)
	if span.IsRecording() {
		span.SetAttributes(AttrPages.Int(w.pages), AttrRecords.Int(w.records))
	}
	if err == nil {
		return nil
	}
	e := Classify(ctx, err, BadGateway)
	endCall(span, err, e)
	return e
}

// walk is one WalkHotels.
type walk struct {
	c              *Client
	brand          string
	visit          func(rec []byte) error
	stats          *WalkStats // nil: not counted
	onPage         func()     // nil: none
	pages, records int
}

// page fetches one list page: one HTTP request with its retries, one
// outcome for the breaker (guarded).
func (c *Client) page(ctx context.Context, u string, buf *bytes.Buffer) (body []byte, err error) {
	err = c.guarded(ctx, func() error {
		var err error
		body, err = c.do(ctx, u, buf)
		return err
	})
	return body, err
}

// run walks every page.
func (w *walk) run(ctx context.Context) error {
	c := w.c
	var walked int64   // body bytes of this walk (MaxWalkBytes)
	var pd pageDecoder // reused: its records slice is scratch
	// The pages under way, reused: an unpaced walk fetches the next
	// page into one while the records of the other are handed over
	// (walkahead.go); a paced walk uses the first only.
	var bufs [2]bytes.Buffer
	ahead := c.cfg.WalkAhead && c.pace == nil
	var next *pageFetch // the next page, fetched meanwhile
	defer func() { next.stop() }()
	seen := make(map[string]struct{})
	cursor := ""
	pageURL := func() string {
		q := url.Values{"limit": {strconv.Itoa(c.cfg.PageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		return c.hotelsURL(w.brand, "") + "?" + q.Encode()
	}
	for page := 1; ; page++ {
		if page > c.cfg.MaxPages {
			return &answerError{reason: "more than " + strconv.Itoa(c.cfg.MaxPages) + " pages"}
		}
		var body []byte
		var err error
		if next != nil {
			body, err = next.wait()
			next = nil
		} else {
			body, err = c.page(ctx, pageURL(), &bufs[0])
		}
		if err != nil {
			// An unknown brand lists as empty: a 404 here is a wrong
			// base address or route (docs/contract.md section 10).
			if se := (*statusError)(nil); errors.As(err, &se) && se.status == http.StatusNotFound {
				c.cfg.Logger.Error("pms list route answered 404: configuration fault, check the PMS base URL", "brand", w.brand)
			}
			return err
		}
		w.pages++
		if w.onPage != nil {
			w.onPage()
		}
		if walked += int64(len(body)); walked > c.cfg.MaxWalkBytes {
			return &answerError{reason: fmt.Sprintf("list walk larger than %d bytes after %d pages", c.cfg.MaxWalkBytes, page),
				err: ErrWalkOverBound}
		}
		if c.pace != nil {
			// The page's share of ReadBytesPerSecond before its
			// records are decoded and handed over.
			if err := c.pace.WaitN(ctx, max(len(body), 1)); err != nil {
				return err
			}
		}
		recs, hotels, more, err := pd.decode(body)
		if err != nil {
			return &answerError{reason: "list page is not the expected JSON", err: err}
		}
		if !hotels {
			return &answerError{reason: "list page without hotels"}
		}
		if w.stats != nil {
			w.stats.page(len(recs))
		}
		// The cursor is checked before the records are handed over,
		// so that the next page can be fetched meanwhile; a bad
		// cursor still fails the walk after them, as it always has.
		var cursorErr error
		if more != nil {
			cursor = *more
			if cursor == "" {
				cursorErr = &answerError{reason: "empty nextCursor"}
			} else if _, dup := seen[cursor]; dup {
				cursorErr = &answerError{reason: fmt.Sprintf("cursor loop after %d pages", page)}
			} else {
				seen[cursor] = struct{}{}
				if ahead && page < c.cfg.MaxPages {
					next = c.fetchAhead(ctx, pageURL(), &bufs[page%2])
				}
			}
		}
		for i, rec := range recs {
			w.records++
			if err := w.visit(rec); err != nil {
				return err // an *Error (OverBound) is the walk's error as is
			}
			if c.pace != nil && i%yieldEvery == yieldEvery-1 {
				runtime.Gosched() // a paced walk lets waiting goroutines (partners) go first
			}
		}
		if more == nil {
			return nil
		}
		if cursorErr != nil {
			return cursorErr
		}
	}
}

// GetHotel returns the record of one hotel. A PMS 404 is NotFound, whatever
// its body:
// not retried, and not a failure for the breaker.
func (c *Client) GetHotel(ctx context.Context, brand, id string) (json.RawMessage, error) {
	ctx, span := c.startCall(ctx, SpanGetHotel, brand, id)
	defer span.End()
	var rec json.RawMessage
	err := c.call(ctx, span, func(ctx context.Context) error {
		body, err := c.do(ctx, c.hotelsURL(brand, id), nil)
		if err != nil {
			if se := (*statusError)(nil); errors.As(err, &se) && se.status == http.StatusNotFound {
				return errNotFound
			}
			return err
		}
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(body) {
			return &answerError{reason: "hotel is not a JSON object"}
		}
		rec = body
		return nil
	})
	return rec, err // rec is nil unless the call succeeded
}
