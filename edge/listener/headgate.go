package listener

import (
	"context"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// bigHead is how many bytes a connection may read since its last write
// before it counts as reading an oversized request head. No request of
// this API needs more than a few hundred bytes; nginx's default
// large_client_header_buffers line limit is the same 8 KB.
const bigHead = 8 << 10

// headGate lets at most a few connections at a time (GOMAXPROCS) read an
// oversized request head: more than bigHead bytes read since the connection
// last wrote. Hundreds of such heads at once (net/http grows its buffer 4 KB
// at a time, and Go has no goroutine priorities) would queue a health check
// behind all of them; past the gate they wait parked, in arrival order, and
// only for one another (the figures: bench/README.md).
//
// A connection holds its slot until it writes (an answer, a 431, an HTTP/2
// frame), its handler starts (releaseHead) or it is closed. A waiting Read
// still ends at the read deadline (ReadHeaderTimeout) and at Close, so a
// stalled head delays other oversized heads at most that long, never a normal request.
type headGate struct {
	slots chan struct{}
	limit int64 // bytes read since the last write that make a head oversized
}

func newHeadGate(slots, limit int) *headGate {
	return &headGate{slots: make(chan struct{}, slots), limit: int64(limit)}
}

// listener wraps ln so that every accepted connection passes the gate.
func (g *headGate) listener(ln net.Listener) net.Listener { return gateListener{ln, g} }

type gateListener struct {
	net.Listener
	gate *headGate
}

func (l gateListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, gate: l.gate, closed: make(chan struct{}), kick: make(chan struct{}, 1)}, nil
}

// gatedConn counts the bytes read since the last write and takes a gate
// slot before reading past the gate's limit. Counting costs two atomic
// operations a Read and a Write, no lock: every connection pays it.
type gatedConn struct {
	net.Conn
	gate   *headGate
	closed chan struct{} // closed by Close: a waiting Read returns
	kick   chan struct{} // a new read deadline: a waiting Read rechecks it

	read      atomic.Int64 // bytes read since the last write or releaseHead
	holding   atomic.Bool  // holds a gate slot
	deadline  atomic.Int64 // the read deadline as last set, Unix ns; 0: none
	closeOnce sync.Once
}

func (c *gatedConn) Read(p []byte) (int, error) {
	if c.read.Load() >= c.gate.limit && !c.holding.Load() {
		if err := c.acquire(); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// acquire waits for a gate slot, the read deadline, or Close.
func (c *gatedConn) acquire() error {
	for {
		var expired <-chan time.Time
		var t *time.Timer
		if d := c.deadline.Load(); d != 0 {
			wait := time.Until(time.Unix(0, d))
			if wait <= 0 {
				return os.ErrDeadlineExceeded
			}
			t = time.NewTimer(wait)
			expired = t.C
		}
		var err error
		select {
		case c.gate.slots <- struct{}{}:
			c.holding.Store(true)
			if c.read.Load() < c.gate.limit { // it wrote while waiting
				c.release()
			}
			return nil
		case <-expired:
			err = os.ErrDeadlineExceeded
		case <-c.closed:
			err = net.ErrClosed
		case <-c.kick:
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return err
		}
	}
}

// release resets the count and frees the slot, if held.
func (c *gatedConn) release() {
	c.read.Store(0)
	if c.holding.CompareAndSwap(true, false) {
		<-c.gate.slots
	}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	c.release()
	return c.Conn.Write(p)
}

func (c *gatedConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.release()
	})
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close before closing a connection with
// unread input, so that the client reads its answer rather than a reset.
func (c *gatedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *gatedConn) SetDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *gatedConn) SetReadDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *gatedConn) noteDeadline(t time.Time) {
	var d int64
	if !t.IsZero() {
		d = t.UnixNano()
	}
	c.deadline.Store(d)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// gatedConnKey carries a request's gatedConn, set by ConnContext.
type gatedConnKey struct{}

// gateConnContext is http.Server.ConnContext: it remembers the gated
// connection (under TLS, the one beneath it) for releaseHead.
func gateConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	if gc, ok := c.(*gatedConn); ok {
		return context.WithValue(ctx, gatedConnKey{}, gc)
	}
	return ctx
}

// releaseHead frees the request's connection's gate slot as its handler
// starts: a slot bounds reading a head, not the answer's work (a PMS call
// can take seconds).
func releaseHead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gc, ok := r.Context().Value(gatedConnKey{}).(*gatedConn); ok {
			gc.release()
		}
		next.ServeHTTP(w, r)
	})
}
