package edge

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

type testKey struct{}

func newReqContext(parent context.Context, d time.Duration) *state {
	st := &state{requestID: "req_x", correlationID: "corr"}
	st.callerIDs = upstream.CallerIDs{RequestID: st.requestID, CorrelationID: st.correlationID} // as withState does
	st.ctx.init(parent, st, time.Now().Add(d))
	return st
}

// The request context answers its deadline and values, and closes Done
// exactly at the deadline.
func TestReqContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newReqContext(context.WithValue(context.Background(), testKey{}, "v"), 3*time.Second)
		ctx := &st.ctx
		start := time.Now()
		if d, ok := ctx.Deadline(); !ok || d.Sub(start) != 3*time.Second {
			t.Fatalf("deadline %v %v", d, ok)
		}
		if ctx.Value(stateKey{}) != st || ctx.Value(testKey{}) != "v" ||
			upstream.CallerIDsFrom(ctx) != (upstream.CallerIDs{RequestID: "req_x", CorrelationID: "corr"}) {
			t.Fatal("values not answered")
		}
		time.Sleep(3 * time.Second) // the bubble's clock
		synctest.Wait()             // the deadline's timer has run
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("after the deadline, Err %v", ctx.Err())
		}
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Done open after the deadline")
		}
		ctx.cancel()
	})
	synctest.Test(t, func(t *testing.T) {
		st := newReqContext(context.Background(), 2*time.Second)
		ctx := &st.ctx
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		start := time.Now()
		<-child.Done()
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("child done after %s, want 2s", el)
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err %v, child %v", ctx.Err(), child.Err())
		}
		if ctx.Value(stateKey{}) != st {
			t.Fatal("state lost once the timer runs")
		}
		ctx.cancel()
	})
}

// An earlier deadline or cancellation of the parent wins; stop ends the
// timer.
func TestReqContextParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st := newReqContext(parent, 10*time.Second)
		ctx := &st.ctx
		if d, _ := ctx.Deadline(); time.Until(d) != time.Second {
			t.Fatalf("deadline in %s, want the parent's 1s", time.Until(d))
		}
		cancel()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatalf("parent canceled, Err %v", ctx.Err())
		}
		<-ctx.Done()

		st = newReqContext(context.Background(), 10*time.Second)
		done := st.ctx.Done()
		st.ctx.cancel()
		<-done
		if !errors.Is(st.ctx.Err(), context.Canceled) {
			t.Fatalf("after stop, Err %v", st.ctx.Err())
		}
	})
}
