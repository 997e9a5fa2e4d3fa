package listener

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// gatePipe is one gated server end of an in-memory connection, and the
// client end that feeds it.
type gatePipe struct {
	server *gatedConn
	client net.Conn
}

func newGatePipes(t *testing.T, g *headGate, n int) []gatePipe {
	t.Helper()
	ps := make([]gatePipe, n)
	for i := range ps {
		s, c := net.Pipe()
		t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
		ps[i] = gatePipe{
			server: &gatedConn{Conn: s, gate: g, closed: make(chan struct{}), kick: make(chan struct{}, 1)},
			client: c,
		}
	}
	return ps
}

// readAsync reads n bytes on the server end in a goroutine; the result
// arrives on the channel.
func (p gatePipe) readAsync(n int) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(p.server, make([]byte, n))
		done <- err
	}()
	return done
}

// send writes b from the client end in a goroutine (net.Pipe is
// unbuffered: a write waits for the reads that take it).
func (p gatePipe) send(b []byte) {
	go func() { _, _ = p.client.Write(b) }()
}

func pending(ch <-chan error) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// A connection that read past the limit since it last wrote waits for a
// slot; a connection under the limit never waits; a write frees the slot
// for the next in line.
func TestHeadGateQueuesOversizedHeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newHeadGate(1, 8)
		ps := newGatePipes(t, g, 3)
		a, b, small := ps[0], ps[1], ps[2]

		a.send(make([]byte, 16))
		for range 2 { // 8 bytes free, then 8 under the slot
			if err := <-a.readAsync(8); err != nil {
				t.Fatal(err)
			}
		}
		if !a.server.holding.Load() {
			t.Fatal("a read past the limit without taking the slot")
		}

		b.send(make([]byte, 16))
		if err := <-b.readAsync(8); err != nil {
			t.Fatal(err)
		}
		bNext := b.readAsync(8)
		synctest.Wait()
		if !pending(bNext) {
			t.Fatal("b read past the limit while a held the only slot")
		}

		small.send(make([]byte, 7))
		if err := <-small.readAsync(7); err != nil {
			t.Fatalf("a connection under the limit waited: %v", err)
		}

		go func() { _, _ = io.ReadAll(a.client) }()
		if _, err := a.server.Write([]byte("answer")); err != nil {
			t.Fatal(err)
		}
		if err := <-bNext; err != nil {
			t.Fatalf("b after a answered: %v", err)
		}
		if !b.server.holding.Load() || a.server.holding.Load() {
			t.Fatal("the slot did not pass from a to b")
		}
	})
}

// A waiting Read still ends at the read deadline, including a deadline set
// while it waits, and at Close; a closed holder frees its slot.
func TestHeadGateWaitEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newHeadGate(1, 4)
		ps := newGatePipes(t, g, 4)
		holder, late, closing, next := ps[0], ps[1], ps[2], ps[3]
		for _, p := range ps {
			p.send(make([]byte, 8))
			if err := <-p.readAsync(4); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-holder.readAsync(4); err != nil {
			t.Fatal(err)
		}

		start := time.Now()
		_ = late.server.SetReadDeadline(start.Add(5 * time.Second))
		lateDone := late.readAsync(4)
		closingDone := closing.readAsync(4)
		time.Sleep(time.Second)                                    // synctest's clock: no wall-clock wait
		_ = closing.server.SetDeadline(start.Add(2 * time.Second)) // moved while waiting
		synctest.Wait()
		if !pending(lateDone) || !pending(closingDone) {
			t.Fatal("a Read passed the gate while the slot was held")
		}
		err := <-closingDone
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != 2*time.Second {
			t.Fatalf("Read with a deadline moved to 2 s: %v after %v", err, time.Since(start))
		}
		err = <-lateDone
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("Read with a 5 s deadline: %v after %v", err, time.Since(start))
		}

		nextDone := next.readAsync(4)
		synctest.Wait()
		if !pending(nextDone) {
			t.Fatal("next passed the gate while the slot was held")
		}
		waiter := newGatePipes(t, g, 1)[0]
		waiter.send(make([]byte, 8))
		if err := <-waiter.readAsync(4); err != nil {
			t.Fatal(err)
		}
		waiterDone := waiter.readAsync(4)
		synctest.Wait()
		_ = waiter.server.Close()
		if err := <-waiterDone; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("waiting Read on a closed connection: %v", err)
		}
		_ = holder.server.Close()
		if err := <-nextDone; err != nil {
			t.Fatalf("after the holder closed: %v", err)
		}
	})
}

// A connection that writes while it waits (HTTP/2 writes from another
// goroutine) no longer reads an oversized head: the slot it then gets goes
// straight back.
func TestHeadGateWriteWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newHeadGate(1, 4)
		ps := newGatePipes(t, g, 2)
		a, b := ps[0], ps[1]
		for _, p := range ps {
			p.send(make([]byte, 8))
			go func() { _, _ = io.ReadAll(p.client) }()
			if err := <-p.readAsync(4); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-a.readAsync(4); err != nil {
			t.Fatal(err)
		}
		bNext := b.readAsync(4)
		synctest.Wait()
		if _, err := b.server.Write([]byte("frame")); err != nil {
			t.Fatal(err)
		}
		if _, err := a.server.Write([]byte("answer")); err != nil {
			t.Fatal(err)
		}
		if err := <-bNext; err != nil {
			t.Fatal(err)
		}
		if b.server.holding.Load() || len(g.slots) != 0 {
			t.Fatalf("b holds the slot after writing: holding %v, slots taken %d", b.server.holding.Load(), len(g.slots))
		}
	})
}
