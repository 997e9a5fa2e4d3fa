package pmsim

import (
	"bytes"
	"cmp"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Faults make the Sim misbehave. The zero value is a healthy PMS.
//
// Latency applies to every request. The failure modes (ErrorStatus, Reset,
// Truncate, Malformed, OversizeBytes) apply to the requests picked by
// FailFirst or ErrorRate; when more than one mode is set, the first in the
// order Reset, Truncate, Malformed, OversizeBytes, ErrorStatus wins. Faults
// act before authentication and routing, as a broken network or proxy would.
type Faults struct {
	// Latency delays every request by this much before anything else,
	// plus a random share of Jitter (uniform in [0, Jitter)). A request
	// whose client goes away while it waits is dropped at once, unanswered.
	Latency, Jitter time.Duration

	// ErrorRate is the share of requests that fail, from 0 to 1, drawn from
	// the Sim's seeded source. Zero means every request fails when a
	// failure mode is set, and none when none is.
	ErrorRate float64
	// FailFirst, when positive, fails exactly the first FailFirst requests
	// after SetFaults, and no later one (ErrorRate is then ignored): a PMS
	// that flaps and recovers.
	FailFirst int

	// ErrorStatus is the status of a failed request, with a JSON body
	// {"error": "<status in snake case>"}. Zero means 500 when ErrorRate or
	// FailFirst picks requests and no other mode is set.
	ErrorStatus int
	// RetryAfter, when set, is sent as the Retry-After header of every
	// ErrorStatus answer (e.g. "2", or an HTTP date).
	RetryAfter string
	// Reset sends the real status and headers with the full Content-Length
	// and half the body, then resets the connection (TCP RST): the client
	// reads a "connection reset" error mid-body.
	Reset bool
	// Truncate sends the real status and headers with the full
	// Content-Length, then only half the body, then closes the connection.
	Truncate bool
	// Malformed answers 200 with Content-Type application/json and an HTML
	// body, as a misconfigured proxy would.
	Malformed bool
	// OversizeBytes, when positive, answers with the real status and a body
	// that is still valid JSON but padded with white space past this many
	// bytes, streamed without a Content-Length.
	OversizeBytes int64
}

func (f Faults) failing() bool {
	return f.ErrorStatus != 0 || f.Reset || f.Truncate || f.Malformed || f.OversizeBytes > 0 ||
		f.ErrorRate > 0 || f.FailFirst > 0
}

type faultState struct {
	mu   sync.Mutex
	rng  *rand.Rand // seeded by Config.Seed
	cur  Faults
	seen int // requests since SetFaults, for FailFirst
}

// SetFaults replaces the faults in force, for requests arriving from now on,
// and restarts the FailFirst count.
func (s *Sim) SetFaults(f Faults) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.cur = f
	s.faults.seen = 0
}

// Heal removes every fault.
func (s *Sim) Heal() { s.SetFaults(Faults{}) }

// pick decides, at a request's arrival, its delay and whether it fails.
func (fs *faultState) pick() (f Faults, delay time.Duration, fail bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f = fs.cur
	fs.seen++
	delay = max(f.Latency, 0)
	if f.Jitter > 0 {
		delay += time.Duration(fs.rng.Int64N(int64(f.Jitter)))
	}
	switch {
	case !f.failing():
	case f.FailFirst > 0:
		fail = fs.seen <= f.FailFirst
	case f.ErrorRate > 0:
		fail = fs.rng.Float64() < f.ErrorRate
	default:
		fail = true
	}
	return f, delay, fail
}

// applyFaults runs the faults for one request. It reports whether the
// request is still to be served normally.
func (s *Sim) applyFaults(w http.ResponseWriter, r *http.Request, serve http.HandlerFunc) bool {
	f, delay, fail := s.faults.pick()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return false
		}
	}
	if !fail {
		return true
	}
	s.stats.inc(&s.stats.s.Faulted)
	switch {
	case f.Reset, f.Truncate:
		res, body := capture(r, serve)
		cutShort(w, res, body, f.Reset)
	case f.Malformed:
		writeJSON(w, http.StatusOK, []byte("<html><body><h1>502 Bad Gateway</h1><p>upstream sent an invalid response</p></body></html>\n"))
	case f.OversizeBytes > 0:
		res, body := capture(r, serve)
		oversize(w, res, body, f.OversizeBytes)
	default:
		status := f.ErrorStatus
		if status < 100 || status > 999 {
			status = http.StatusInternalServerError
		}
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		writeError(w, status, cmp.Or(strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_")), "error"))
	}
	return false
}

// cutShort sends the status line, the headers (the full Content-Length
// among them) and half the body of the real answer, then closes the
// connection: with a TCP RST when rst, else a FIN (the client reads an
// unexpected EOF). Because an answer has begun, a client's transport
// cannot silently replay the request.
func cutShort(w http.ResponseWriter, res *http.Response, body []byte, rst bool) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil { // HTTP/2 and the like: abort the stream instead
		panic(http.ErrAbortHandler)
	}
	defer conn.Close()
	res.ContentLength, res.Body = int64(len(body)), io.NopCloser(bytes.NewReader(body[:len(body)/2]))
	_ = res.Write(rw) // fails short of ContentLength, as meant
	_ = rw.Flush()
	if tcp, ok := conn.(*net.TCPConn); ok && rst {
		_ = tcp.SetLinger(0) // Close sends RST, not FIN
	}
}

// capture is the answer serve gives r, kept in memory.
func capture(r *http.Request, serve http.HandlerFunc) (*http.Response, []byte) {
	rec := httptest.NewRecorder()
	serve(rec, r)
	return rec.Result(), rec.Body.Bytes()
}

// oversize writes the captured answer padded with white space before its
// final byte (inside the closing brace or bracket, so it stays valid JSON)
// until the body is larger than limit.
func oversize(w http.ResponseWriter, res *http.Response, body []byte, limit int64) {
	maps.Copy(w.Header(), res.Header)
	w.Header().Del("Content-Length")
	w.WriteHeader(res.StatusCode)
	head, tail := body, []byte(nil)
	if n := len(body); n > 0 && (body[n-1] == '}' || body[n-1] == ']') {
		head, tail = body[:n-1], body[n-1:]
	}
	_, _ = w.Write(head)
	pad := bytes.Repeat([]byte{' '}, 32<<10)
	for left := limit + 1 - int64(len(body)); left > 0; left -= int64(len(pad)) {
		if _, err := w.Write(pad[:min(int64(len(pad)), left)]); err != nil {
			return // the client went away
		}
	}
	_, _ = w.Write(tail)
}
