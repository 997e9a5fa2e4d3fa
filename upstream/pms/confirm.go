package pms

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/partner-edge/partner-edge/upstream"
)

// A late stray answer never becomes partner data (docs/contract.md section
// 22; docs/resilience.md, "Stray answers"). A PMS, or a proxy in front of
// it, that writes an extra answer a few milliseconds after a real one can
// have it read as the answer of the next request already sent on the same
// HTTP/1.1 connection: no HTTP/1.1 client can tell the two apart on the
// wire, and the idle guard (idleguard.go) only sees bytes that arrive
// before the next request is written. What the edge can tell without the
// PMS's help:
//
//   - a stray can only arrive on a reused connection: the first answer on
//     a new connection is the PMS's answer to that request;
//   - the harm is done by an answer that ends something: the page that ends
//     a walk (nextCursor null), a page that breaks the walk's cursor chain, a
//     404, another final status, an answer the edge cannot use, a get's
//     record that is not the one asked.
//
// So such an answer, when it came on a reused HTTP/1 connection, is not
// believed: the request is sent again on a new connection
// (boundary.fresh), whose answer is the one used. When the two differ, the
// first is counted as refused (PMSMetrics.Refused) and logged (once per
// walk; for gets at most every refusalLogEvery), and its connection is
// closed: the real answer the stray displaced may still be on its way
// there (an answer that arrives while the connection is idle closes it
// anyway: net/http's reader and the idle guard). Answers over HTTP/2 are
// framed per stream and never confirmed.

// via is how an answer came: its last attempt's connection.
type via struct {
	conn net.Conn
	// reused: an HTTP/1 connection that carried an answer before, on
	// which a stray may have been read as this answer.
	reused bool
}

// retire closes the connection of an answer its confirmation refused: the
// real answer the stray displaced may follow on it.
func (v via) retire() {
	if v.reused && v.conn != nil {
		_ = v.conn.Close()
	}
}

// doubtFailure is the reason to confirm a request that failed with err on
// a reused connection: an answer the policy ends the request with, not a
// failure to get one (those were sent again already); "" for none.
func doubtFailure(err error) string {
	var (
		se *statusError
		ae *answerError
	)
	switch {
	case errors.As(err, &se) && se.status == http.StatusNotFound:
		return upstream.RefusedNotFound
	case errors.As(err, &se) && !retryableStatus(se.status):
		return upstream.RefusedStatus
	case errors.As(err, &ae):
		return upstream.RefusedBadAnswer
	}
	return ""
}

// sameAnswer reports whether a confirmation gave what the first answer
// gave: the same body, or the same failure.
func sameAnswer(body []byte, err error, body2 []byte, err2 error) bool {
	if (err == nil) != (err2 == nil) {
		return false
	}
	if err != nil {
		return upstream.Cause(err) == upstream.Cause(err2)
	}
	return bytes.Equal(body, body2)
}

// idReader finds a get's hotel_id; pooled (Client.idReaders), its
// decoder's buffers reused.
type idReader struct {
	dec jsontext.Decoder
	in  bytes.Buffer
}

// recordIs reports whether body, a get's answer, is a JSON object whose
// hotel_id (docs/pms-api.md section 3) is id, case aside: the answer
// belongs to the request. A record nested deeper (a list page) does not
// count; a name or an id written with escapes does not match (the answer
// is then confirmed, which costs a request, never a wrong answer).
func (c *Client) recordIs(body []byte, id string) bool {
	r, _ := c.idReaders.Get().(*idReader)
	if r == nil {
		r = &idReader{}
	}
	defer func() {
		r.in = bytes.Buffer{} // keep no alias of the body
		r.dec.Reset(&r.in, pageOptions...)
		c.idReaders.Put(r)
	}()
	r.in = *bytes.NewBuffer(body) // parsed in place, not copied
	r.dec.Reset(&r.in, pageOptions...)
	if tok, err := r.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for r.dec.PeekKind() == '"' {
		name, err := r.dec.ReadValue()
		if err != nil {
			return false
		}
		if string(name) != `"hotel_id"` {
			if err := r.dec.SkipValue(); err != nil {
				return false
			}
			continue
		}
		v, err := r.dec.ReadValue()
		return err == nil && len(v) == len(id)+2 && v[0] == '"' && equalFoldASCII(v[1:len(v)-1], id)
	}
	return false
}

// equalFoldASCII reports whether b and s are equal, ASCII letters' case
// aside (ids are UUIDs; anything else simply does not match).
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// refusalLogEvery bounds the log lines of refused get answers (and of a
// list route answering 404): at most one a minute per client and cause,
// with the count since the last (docs/operations.md, "What to watch":
// no line a PMS can repeat comes more often).
const refusalLogEvery = time.Minute

// refusals counts a client's refused get answers for its log lines.
type refusals struct {
	loggedAt atomic.Int64 // unix nanoseconds of the last line
	since    atomic.Int64 // refused since the last line
}

// refused counts one refused answer of a get, and logs at WARN when the
// last line is old enough.
func (c *Client) refused(ctx context.Context, reason string) {
	if m := c.cfg.Metrics; m != nil {
		m.Refused(ctx, reason)
	}
	n := c.refusals.since.Add(1)
	now := c.cfg.Now().UnixNano()
	last := c.refusals.loggedAt.Load()
	if last != 0 && time.Duration(now-last) < refusalLogEvery || !c.refusals.loggedAt.CompareAndSwap(last, now) {
		return
	}
	c.refusals.since.Add(-n)
	c.cfg.Logger.WarnContext(ctx, "pms answers refused: came on a reused connection and differed when asked again on a new one",
		"refused", n, "reason", reason)
}

// listNotFound logs, at most once per refusalLogEvery with the count left
// out, that the list route answered 404: a configuration fault every walk
// meets again until it is fixed, and walks are retried.
func (c *Client) listNotFound(ctx context.Context, brand string) {
	n := c.notFound.since.Add(1)
	now := c.cfg.Now().UnixNano()
	last := c.notFound.loggedAt.Load()
	if last != 0 && time.Duration(now-last) < refusalLogEvery || !c.notFound.loggedAt.CompareAndSwap(last, now) {
		return
	}
	c.notFound.since.Add(-n)
	c.cfg.Logger.ErrorContext(ctx, "pms list route answered 404: configuration fault, check the PMS base URL", "brand", brand,
		"walks", n, "repeats_every", refusalLogEvery.String())
}

// walkRefusals counts one walk's refused answers by reason, for its one
// log line.
type walkRefusals struct{ by map[string]int }

func (r *walkRefusals) add(ctx context.Context, c *Client, reason string) {
	if m := c.cfg.Metrics; m != nil {
		m.Refused(ctx, reason)
	}
	if r.by == nil {
		r.by = make(map[string]int, 2)
	}
	r.by[reason]++
}

// log writes the walk's line at WARN, if it refused any answer.
func (r *walkRefusals) log(ctx context.Context, c *Client, brand string) {
	if len(r.by) == 0 {
		return
	}
	attrs := []any{"brand", brand}
	n := 0
	for _, reason := range upstream.RefusalReasons {
		if k := r.by[reason]; k > 0 {
			attrs = append(attrs, "refused_"+reason, k)
			n += k
		}
	}
	c.cfg.Logger.WarnContext(ctx, "pms walk refused answers: came on a reused connection and differed when asked again on a new one",
		append(attrs, "refused", n)...)
}
