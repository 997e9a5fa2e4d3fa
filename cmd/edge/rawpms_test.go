package main

// rawPMS is a PMS that misbehaves at the socket level, for the tests of the
// edge's PMS connection (pmsconn_test.go, pmsstray_test.go, pmsleak_test.go;
// docs/contract.md sections 19 and 22): it closes idle connections,
// restarts on its address, answers 408 on idle connections and to a
// request, writes forged answers after real ones (on an idle connection,
// or late, while the next request is on the wire), sends endless and
// oversized heads, and plants internal text in a head line, a status line
// and a 500's body. It answers through a handler (a *pmsim.Sim) with
// net/http's ReadRequest and Response.Write, and runs each TCP
// connection's loop itself: its faults act in a connection's idle time,
// which net/http's server keeps to itself. Every behaviour can be changed
// while it runs (Set): a test warms up against a healthy PMS, then turns a
// fault on.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// rawHead is how the head of every answer misbehaves.
type rawHead int

const (
	// headOK writes a normal head.
	headOK rawHead = iota
	// headEndlessStatusLine writes a status line that never ends.
	headEndlessStatusLine
	// headEndlessHeader writes one header line that never ends.
	headEndlessHeader
	// headRepeated writes the same header line for ever.
	headRepeated
	// headDistinct writes a new header line for ever.
	headDistinct
	// headHuge writes 64 MiB of headers, then the real answer.
	headHuge
	// headHugeInformational writes informational (103) answers of 900 KiB
	// heads each, more of them than any client should read, then the
	// real answer.
	headHugeInformational
)

// rawFaults is what the server does besides answering. The zero value is a
// healthy PMS.
type rawFaults struct {
	// IdleClose closes a keep-alive connection idle this long; zero never.
	IdleClose time.Duration
	// Idle408 writes an unsolicited "HTTP/1.1 408 Request Timeout" on a
	// connection idle this long (the server too), then closes it, as nginx
	// and Apache do; zero never.
	Idle408 time.Duration
	// ForgedAfter writes, this long after each answer and while the
	// connection and the server are still idle, a second answer nobody
	// asked for: the same answer with every display_name replaced by
	// forgedName and, on a list page, a null nextCursor. Zero never.
	ForgedAfter time.Duration
	// Head makes every answer's head misbehave.
	Head rawHead

	// StrayAfter writes Stray this long after each real answer, whether
	// the connection is idle or carries the next request already (a PMS
	// or proxy that writes a late extra answer): between two whole
	// answers, never inside one. Zero never.
	StrayAfter time.Duration
	// Stray is the whole raw answer StrayAfter writes (strayPage,
	// strayNotFound).
	Stray []byte
	// HeadLine, when set, is written as is as a line of every answer's
	// head, after the status line (a line without a colon is one net/http
	// refuses, quoting it).
	HeadLine string
	// StatusLine, when set, is every answer's status line instead of its
	// own.
	StatusLine string
	// Fail500, when set, answers every request 500 with Fail500 as the
	// status line's reason phrase and as the body.
	Fail500 string
	// Once408 answers the next request, once, with a 408 that leaves the
	// connection open (no Connection: close).
	Once408 bool
}

// forgedName is the display_name of every record of a forged answer.
const forgedName = "Forged Hotel"

// rawStats counts what the server did.
type rawStats struct {
	IdleClosed int64 // connections closed by rawFaults.IdleClose
	Sent408    int64 // unsolicited 408s written
	Forged     int64 // forged answers written
	BadHeads   int64 // answers whose head misbehaved (rawFaults.Head)
	Restarts   int64 // Restart calls
	Strays     int64 // late stray answers written (rawFaults.StrayAfter)
	Planted    int64 // answers with planted text (HeadLine, StatusLine, Fail500)
}

// rawRequest is one request the server read: the client's port (its
// connection) and what it asked, and the status it was answered.
type rawRequest struct {
	Port   string
	Path   string
	Status int
}

// rawPMS is a raw-socket PMS on a loopback port. It is safe for concurrent
// use.
type rawPMS struct {
	h    http.Handler
	addr string

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	faults rawFaults
	closed bool
	wg     sync.WaitGroup

	idleClosed, sent408, forged, badHeads, restarts, strays, planted atomic.Int64
	// lastRequest is when a request last arrived on any connection (unix
	// nanoseconds).
	lastRequest atomic.Int64
	// requests is every request read, in order (mu).
	requests []rawRequest
}

// startRawPMS serves h on 127.0.0.1 at a port the kernel chooses.
func startRawPMS(h http.Handler) (*rawPMS, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &rawPMS{h: h, addr: ln.Addr().String(), conns: make(map[net.Conn]struct{})}
	s.serve(ln)
	return s, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:40123.
func (s *rawPMS) URL() string { return "http://" + s.addr }

// Set replaces the faults; connections already open follow from their
// next request or idle period.
func (s *rawPMS) Set(f rawFaults) {
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
}

func (s *rawPMS) current() rawFaults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// Stats returns the counts so far.
func (s *rawPMS) Stats() rawStats {
	return rawStats{IdleClosed: s.idleClosed.Load(), Sent408: s.sent408.Load(), Forged: s.forged.Load(),
		BadHeads: s.badHeads.Load(), Restarts: s.restarts.Load(), Strays: s.strays.Load(), Planted: s.planted.Load()}
}

// Requests returns every request read so far, in order.
func (s *rawPMS) Requests() []rawRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]rawRequest(nil), s.requests...)
}

// take408 reports whether this request is the one Once408 answers.
func (s *rawPMS) take408() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.faults.Once408 {
		return false
	}
	s.faults.Once408 = false
	return true
}

// Restart plays a PMS restarting on the same address: the listener and
// every open connection are closed, then the server listens again.
func (s *rawPMS) Restart() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.restarts.Add(1)
	var ln net.Listener
	var err error
	// The old socket may linger for a moment (the outside event: the
	// kernel letting the port go); a loaded machine may take longer.
	for deadline := time.Now().Add(testkit.EventuallyTimeout); ; {
		if ln, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	if err != nil {
		return fmt.Errorf("rawpms: listen again on %s: %w", s.addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = ln.Close()
		return net.ErrClosed
	}
	s.serve(ln)
	return nil
}

// Close stops the server and waits for its goroutines.
func (s *rawPMS) Close() {
	s.mu.Lock()
	s.closed = true
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serve accepts on ln until it is closed; s.mu is held or ln is new.
func (s *rawPMS) serve(ln net.Listener) {
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				_ = c.Close()
				return
			}
			s.conns[c] = struct{}{}
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				s.conn(c)
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				_ = c.Close()
			}()
		}
	}()
}

// conn serves one connection: requests one after another, and what the
// faults do while it is idle. Every write to c is of a whole answer, under
// a lock of the connection's (late strays are written by timers).
func (s *rawPMS) conn(c net.Conn) {
	br := bufio.NewReader(c)
	lc := &lockedConn{Conn: c}
	defer lc.stop()
	var forge []byte // the forged answer due after the last one
	last := time.Now()
	_, port, _ := net.SplitHostPort(c.RemoteAddr().String())
	for {
		if !s.idle(lc, br, &forge, last) {
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, req)
		res := rec.Result()
		body := rec.Body.Bytes()
		f := s.current()
		answer := rawAnswer(res, body)
		switch {
		case s.take408():
			res.StatusCode = http.StatusRequestTimeout
			answer = []byte("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
		case f.Fail500 != "":
			res.StatusCode = http.StatusInternalServerError
			answer = []byte(fmt.Sprintf("HTTP/1.1 500 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
				f.Fail500, len(f.Fail500), f.Fail500))
		}
		answer = plant(answer, f)
		if f.HeadLine != "" || f.StatusLine != "" || f.Fail500 != "" {
			s.planted.Add(1)
		}
		s.mu.Lock()
		s.requests = append(s.requests, rawRequest{Port: port, Path: req.URL.RequestURI(), Status: res.StatusCode})
		s.mu.Unlock()
		if f.Head != headOK {
			s.badHeads.Add(1)
			if !s.badHead(lc, f.Head, res, body) {
				return
			}
		} else if _, err := lc.Write(answer); err != nil {
			return
		}
		last = time.Now()
		forge = nil
		if f.ForgedAfter > 0 && res.StatusCode == http.StatusOK {
			forge = rawAnswer(res, forgedAnswer(body))
		}
		if f.StrayAfter > 0 && f.Stray != nil {
			lc.later(f.StrayAfter, f.Stray, func() { s.strays.Add(1) })
		}
		if req.Close {
			return
		}
	}
}

// plant puts f's planted text in answer, a whole raw answer: its status
// line replaced (StatusLine), a line added to its head (HeadLine).
func plant(answer []byte, f rawFaults) []byte {
	if f.StatusLine == "" && f.HeadLine == "" {
		return answer
	}
	status, rest, _ := bytes.Cut(answer, []byte("\r\n"))
	if f.StatusLine != "" {
		status = []byte(f.StatusLine)
	}
	out := append(append([]byte{}, status...), "\r\n"...)
	if f.HeadLine != "" {
		out = append(append(out, f.HeadLine...), "\r\n"...)
	}
	return append(out, rest...)
}

// lockedConn writes whole answers to a connection, now or later (a late
// stray), never two at once; stop waits for the later ones.
type lockedConn struct {
	net.Conn
	mu sync.Mutex
	wg sync.WaitGroup
}

func (c *lockedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.Write(p)
}

// later writes p after d, calling wrote when it did.
func (c *lockedConn) later(d time.Duration, p []byte, wrote func()) {
	c.wg.Add(1)
	time.AfterFunc(d, func() {
		defer c.wg.Done()
		if _, err := c.Write(p); err == nil {
			wrote()
		}
	})
}

func (c *lockedConn) stop() { c.wg.Wait() }

// idle waits for the next request's first byte, doing meanwhile what the
// faults say an idle connection gets. It reports whether a request is
// there to read.
//
// A forged answer and an unsolicited 408 are written only when the whole
// server has been quiet that long (no request on any connection), and only
// when no request waits on this one: a test then plays bytes that arrive on
// an idle connection, not an answer racing a request already on its way,
// which no HTTP/1.1 client can tell from the real answer.
func (s *rawPMS) idle(c *lockedConn, br *bufio.Reader, forge *[]byte, since time.Time) bool {
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	for {
		f := s.current()
		quiet := since // since when this connection and the server are quiet
		if last := time.Unix(0, s.lastRequest.Load()); last.After(quiet) {
			quiet = last
		}
		// The earliest idle event still due; none: wait for ever.
		var due time.Time
		pick := func(from time.Time, d time.Duration) {
			if d > 0 && (due.IsZero() || from.Add(d).Before(due)) {
				due = from.Add(d)
			}
		}
		if *forge != nil {
			pick(quiet, f.ForgedAfter)
		}
		pick(quiet, f.Idle408)
		pick(since, f.IdleClose)
		_ = c.SetReadDeadline(due)
		_, err := br.Peek(1)
		if err == nil {
			s.lastRequest.Store(time.Now().UnixNano())
			return true
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return false
		}
		now := time.Now()
		if last := time.Unix(0, s.lastRequest.Load()); last.After(quiet) {
			continue // another connection got a request meanwhile
		}
		forgeDue := *forge != nil && f.ForgedAfter > 0 && now.Sub(quiet) >= f.ForgedAfter
		due408 := f.Idle408 > 0 && now.Sub(quiet) >= f.Idle408
		// Before writing, look once more, without waiting, for a request
		// that came while this goroutine waited to run (a read would not:
		// its deadline has passed).
		if (forgeDue || due408) && (br.Buffered() > 0 || pendingBytes(c.Conn)) {
			s.lastRequest.Store(now.UnixNano())
			return true
		}
		switch {
		case forgeDue:
			if _, err := c.Write(*forge); err != nil {
				return false
			}
			s.forged.Add(1)
			*forge = nil
		case due408:
			_, _ = io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			s.sent408.Add(1)
			return false
		case f.IdleClose > 0 && now.Sub(since) >= f.IdleClose:
			s.idleClosed.Add(1)
			return false
		}
	}
}

// pending reports whether c has bytes to read, without reading or waiting
// (a read deadline cannot do that: a passed deadline fails the read before
// it looks).
func pendingBytes(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}

// answer is the bytes of res as a whole HTTP/1.1 answer with body as its
// body, written by net/http (Response.Write): only the misbehaving heads
// (badHead) are written by hand.
func rawAnswer(res *http.Response, body []byte) []byte {
	r := *res
	r.Header = res.Header.Clone()
	r.Header.Del("Content-Length")
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	var b bytes.Buffer
	_ = r.Write(&b) // a bytes.Buffer does not fail
	return b.Bytes()
}

var (
	forgedDisplayName = regexp.MustCompile(`"display_name"\s*:\s*"(?:[^"\\]|\\.)*"`)
	forgedNextCursor  = regexp.MustCompile(`"nextCursor"\s*:\s*"(?:[^"\\]|\\.)*"`)
)

// forged is body with every display_name replaced by forgedName and the
// next cursor, if any, removed: an answer the PMS never meant.
func forgedAnswer(body []byte) []byte {
	b := forgedDisplayName.ReplaceAll(body, []byte(`"display_name":"`+forgedName+`"`))
	return forgedNextCursor.ReplaceAll(b, []byte(`"nextCursor":null`))
}

// endlessLimit bounds what an endless head writes, so that a client that
// never gives up cannot keep the test busy for ever.
const endlessLimit = 8 << 30

// badHead writes the answer with f's head; it reports whether the
// connection may serve another request.
func (s *rawPMS) badHead(c net.Conn, f rawHead, res *http.Response, body []byte) bool {
	w := &headWriter{w: c}
	chunk := bytes.Repeat([]byte("a"), 32<<10)
	endless := func(start string, line func(i int) []byte) bool {
		w.write([]byte(start))
		for i := 0; w.err == nil && w.written < endlessLimit; i++ {
			w.write(line(i))
		}
		return false
	}
	switch f {
	case headEndlessStatusLine:
		return endless("HTTP/1.1 200 ", func(int) []byte { return chunk })
	case headEndlessHeader:
		return endless("HTTP/1.1 200 OK\r\nX-Endless: ", func(int) []byte { return chunk })
	case headRepeated:
		line := bytes.Repeat([]byte("X-Same: value\r\n"), 2048)
		return endless("HTTP/1.1 200 OK\r\n", func(int) []byte { return line })
	case headDistinct:
		return endless("HTTP/1.1 200 OK\r\n", func(i int) []byte {
			return []byte("X-Header-" + strconv.Itoa(i) + ": value\r\n")
		})
	case headHuge:
		status, rest, _ := bytes.Cut(rawAnswer(res, body), []byte("\r\n"))
		w.write(append(status, "\r\n"...))
		pad := append([]byte("X-Pad: "), append(bytes.Repeat([]byte("p"), 1000), "\r\n"...)...)
		for w.err == nil && w.written < 64<<20 {
			w.write(pad)
		}
		w.write(rest)
		return w.err == nil
	case headHugeInformational:
		pad := append([]byte("X-Hint: "), append(bytes.Repeat([]byte("h"), 1000), "\r\n"...)...)
		for range 8 {
			w.write([]byte("HTTP/1.1 103 Early Hints\r\n"))
			for range 900 {
				w.write(pad)
			}
			w.write([]byte("\r\n"))
		}
		w.write(rawAnswer(res, body))
		return w.err == nil
	}
	return false
}

// headWriter counts what it writes, and writes nothing after an error.
type headWriter struct {
	w       io.Writer
	written int64
	err     error
}

func (hw *headWriter) write(p []byte) {
	if hw.err == nil {
		var n int
		n, hw.err = hw.w.Write(p)
		hw.written += int64(n)
	}
}
