package pms

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"

	"github.com/partner-edge/partner-edge/upstream"
)

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
	return &upstream.Error{Kind: upstream.BadGateway, Err: &answerError{class: "walk_over_bound",
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
// twice in one walk, an empty cursor, more than MaxPages pages or more
// than MaxWalkBytes of bodies is a failure (BAD_GATEWAY): the PMS would
// never end.
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
// Stray answers (confirm.go): a page that came on a reused HTTP/1
// connection and would end the walk (its last page, a broken cursor
// chain, a failure the policy does not retry) is asked again on a new
// connection before any of its records is handed over; the walk goes on
// with the second answer. Refused answers are logged once per walk, at
// WARN.
//
// Memory: each page is read into one buffer, reused from page to page,
// and its records are handed over as slices of it; the walk itself keeps
// one page (at most MaxBodyBytes, in a buffer of up to twice that while
// it grows) and the page's record index, whatever the number of pages;
// two with ClientConfig.WalkAhead, the one handed over and the next,
// fetched meanwhile (fetchAhead), or the one confirmed and its
// confirmation. With ClientConfig.ReadBytesPerSecond, each page waits for
// its share of that rate before its records are handed over, the walk
// yields its processor every yieldEvery records (a background walk's
// bounded CPU: the shadow candidate), and it fetches no page ahead.
func (c *Client) WalkHotels(ctx context.Context, brand string, visit func(rec []byte) error) error {
	ctx, span := c.startCall(ctx, upstream.SpanListHotels, brand, "")
	defer span.End()
	ctx, cancel := withBudget(ctx, c.cfg.WalkTimeout)
	defer cancel()
	w := walk{c: c, brand: brand, visit: visit, stats: upstream.WalkStatsFrom(ctx), onPage: upstream.PageHookFrom(ctx)}
	err := w.run(ctx)
	w.refusals.log(ctx, c, brand)
	if span.IsRecording() {
		span.SetAttributes(upstream.AttrPages.Int(w.pages), upstream.AttrRecords.Int(w.records))
	}
	if err == nil {
		return nil
	}
	e := upstream.Classify(ctx, err, upstream.BadGateway)
	endCall(span, err, e)
	return e
}

// walk is one WalkHotels.
type walk struct {
	c              *Client
	brand          string
	visit          func(rec []byte) error
	stats          *upstream.WalkStats // nil: not counted
	onPage         func()              // nil: none
	pages, records int
	walked         int64 // body bytes of this walk (MaxWalkBytes)
	seen           map[string]struct{}
	pd             pageDecoder // reused: its records slice is scratch
	refusals       walkRefusals
}

// fetched is one list page as fetched: its body (a slice of the buffer it
// was read into), how it came, or why it failed.
type fetched struct {
	body []byte
	via  via
	err  error
}

// page fetches one list page into buf: one HTTP request with its retries,
// one outcome for the breaker (guarded). fresh: on a new connection.
func (c *Client) page(ctx context.Context, u string, buf *bytes.Buffer, fresh bool) fetched {
	var f fetched
	f.err = c.guarded(ctx, func() error {
		var err error
		f.body, f.via, err = c.do(ctx, u, buf, fresh)
		return err
	})
	return f
}

// pageURL is the address of the page at cursor ("": the first).
func (w *walk) pageURL(cursor string) string {
	q := url.Values{"limit": {strconv.Itoa(w.c.cfg.PageSize)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return w.c.hotelsURL(w.brand, "") + "?" + q.Encode()
}

// judged is what a fetched page says: its records and next cursor (nil:
// the last page); fail, the failure that ends the walk before any record
// is handed over; cursorErr, the one that ends it after them (as it
// always has); doubt, the reason to confirm it when it came on a reused
// connection ("" for none).
type judged struct {
	recs      []bodySlice
	next      *string
	fail      error
	cursorErr error
	doubt     string
}

// judge decodes f and checks its cursor against the walk so far; it
// changes nothing of the walk but its decoder.
func (w *walk) judge(f fetched, page int) judged {
	if f.err != nil {
		return judged{fail: f.err, doubt: doubtFailure(f.err)}
	}
	recs, hotels, next, err := w.pd.decode(f.body)
	switch {
	case err != nil:
		return judged{fail: &answerError{class: "bad_json", reason: "list page is not the expected JSON", at: jsonOffset(err), err: err},
			doubt: upstream.RefusedBadAnswer}
	case !hotels:
		return judged{fail: &answerError{class: "no_hotels", reason: "list page without hotels"}, doubt: upstream.RefusedBadAnswer}
	case next == nil:
		return judged{recs: recs, doubt: upstream.RefusedWalkEnd}
	case *next == "":
		return judged{recs: recs, next: next, doubt: upstream.RefusedCursorChain,
			cursorErr: &answerError{class: "empty_cursor", reason: "empty nextCursor"}}
	}
	if _, dup := w.seen[*next]; dup {
		return judged{recs: recs, next: next, doubt: upstream.RefusedCursorChain,
			cursorErr: &answerError{class: "cursor_loop", reason: fmt.Sprintf("cursor loop after %d pages", page)}}
	}
	return judged{recs: recs, next: next}
}

// bound adds n body bytes to the walk: an error past MaxWalkBytes.
func (w *walk) bound(n, page int) error {
	if w.walked += int64(n); w.walked > w.c.cfg.MaxWalkBytes {
		return &answerError{class: "walk_over_bound", err: ErrWalkOverBound,
			reason: fmt.Sprintf("list walk larger than %d bytes after %d pages", w.c.cfg.MaxWalkBytes, page)}
	}
	return nil
}

// run walks every page.
func (w *walk) run(ctx context.Context) error {
	c := w.c
	// The pages under way, reused: an unpaced walk fetches the next page
	// into spare while the records of cur are handed over (fetchAhead);
	// a page being confirmed is fetched again into spare.
	var bufs [2]bytes.Buffer
	cur, spare := &bufs[0], &bufs[1]
	ahead := c.cfg.WalkAhead && c.pace == nil
	var next *pageFetch // the next page, fetched meanwhile
	defer func() { next.stop() }()
	w.seen = make(map[string]struct{})
	u := w.pageURL("")
	for page := 1; ; page++ {
		if page > c.cfg.MaxPages {
			return &answerError{class: "too_many_pages", reason: "more than " + strconv.Itoa(c.cfg.MaxPages) + " pages"}
		}
		var f fetched
		if next != nil {
			f = next.wait()
			next = nil
		} else {
			f = c.page(ctx, u, cur, false)
		}
		j := w.judge(f, page)
		if j.doubt != "" && f.via.reused {
			if err := w.bound(len(f.body), page); err != nil {
				return err
			}
			g := c.page(ctx, u, spare, true)
			cur, spare = spare, cur
			if isAnswer(g.err) && !sameAnswer(f.body, f.err, g.body, g.err) {
				f.via.retire()
				w.refusals.add(ctx, c, j.doubt)
			}
			f, j = g, w.judge(g, page)
		}
		if f.err != nil {
			// An unknown brand lists as empty: a 404 here is a wrong
			// base address or route (docs/contract.md section 10).
			if se := (*statusError)(nil); errors.As(f.err, &se) && se.status == http.StatusNotFound {
				c.listNotFound(ctx, w.brand)
			}
			return f.err
		}
		w.pages++
		if w.onPage != nil {
			w.onPage()
		}
		if err := w.bound(len(f.body), page); err != nil {
			return err
		}
		if c.pace != nil {
			// The page's share of ReadBytesPerSecond before its records
			// are handed over.
			if err := c.pace.WaitN(ctx, max(len(f.body), 1)); err != nil {
				return err
			}
		}
		if j.fail != nil {
			return j.fail
		}
		if w.stats != nil {
			w.stats.Page(len(j.recs))
		}
		// The cursor was checked before the records are handed over, so
		// that the next page can be fetched meanwhile; a bad cursor still
		// fails the walk after them, as it always has.
		if j.next != nil && j.cursorErr == nil {
			w.seen[*j.next] = struct{}{}
			u = w.pageURL(*j.next)
			if ahead && page < c.cfg.MaxPages {
				next = c.fetchAhead(ctx, u, spare)
			}
		}
		for i, rec := range j.recs {
			w.records++
			if err := w.visit(rec); err != nil {
				return err // an *Error (OverBound) is the walk's error as is
			}
			if c.pace != nil && i%yieldEvery == yieldEvery-1 {
				runtime.Gosched() // a paced walk lets waiting goroutines (partners) go first
			}
		}
		switch {
		case j.next == nil:
			return nil
		case j.cursorErr != nil:
			return j.cursorErr
		}
		cur, spare = spare, cur
	}
}

// Fetching ahead (ClientConfig.WalkAhead; bench/README.md, "The PMS
// path"): an unpaced walk fetches the next page while it hands over the
// records of this one, so the PMS's work and the edge's overlap; it then
// holds two pages instead of one (docs/resilience.md, "Memory of a walk").

// pageFetch is a page being fetched by a goroutine of its own.
type pageFetch struct {
	done   chan struct{}
	cancel context.CancelFunc
	page   fetched
}

// fetchAhead starts fetching u into buf (page: retries and the breaker
// included). A fetch stopped because the walk ended first is cancelled,
// which the breaker does not count.
func (c *Client) fetchAhead(ctx context.Context, u string, buf *bytes.Buffer) *pageFetch {
	ctx, cancel := context.WithCancel(ctx)
	f := &pageFetch{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(f.done)
		f.page = c.page(ctx, u, buf, false)
	}()
	return f
}

// wait returns the page once fetched: its body (a slice of the buffer it
// was fetched into) or the error of the fetch.
func (f *pageFetch) wait() fetched {
	<-f.done
	f.cancel()
	return f.page
}

// stop abandons a fetch under way (the walk ended before it needed the
// page) and waits for its goroutine: nothing of the walk outlives it, and
// the buffer is free again. A nil fetch is none.
func (f *pageFetch) stop() {
	if f == nil {
		return
	}
	f.cancel()
	<-f.done
}
