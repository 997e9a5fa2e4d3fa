package dirwatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

// looper runs l.run in a synctest bubble over channels the test feeds, and
// counts the callbacks.
type looper struct {
	events  chan fsnotify.Event
	errs    chan error
	signal  chan struct{}
	changed atomic.Int32 // atomic: the race detector sees no order in synctest.Wait
	signals atomic.Int32
	errors  atomic.Pointer[[]error]
	stop    context.CancelFunc
	done    chan struct{}
}

func startLoop(settle time.Duration) *looper {
	lp := &looper{events: make(chan fsnotify.Event), errs: make(chan error), signal: make(chan struct{}), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	lp.stop = cancel
	l := Loop{
		Changed: func() { lp.changed.Add(1) },
		Settle:  settle,
		Error: func(err error) {
			errs := []error{err}
			if old := lp.errors.Load(); old != nil {
				errs = append(*old, err)
			}
			lp.errors.Store(&errs)
		},
		Signal:   lp.signal,
		Signaled: func() { lp.signals.Add(1) },
	}
	go func() { defer close(lp.done); l.run(ctx, lp.events, lp.errs) }()
	return lp
}

func (lp *looper) end(t *testing.T) {
	t.Helper()
	lp.stop()
	<-lp.done // run returns once its context is done
}

// A burst of changes is read once, Settle after the last of them: every
// change restarts the wait.
func TestChangesSettleIntoOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lp := startLoop(100 * time.Millisecond)
		for range 3 {
			lp.events <- fsnotify.Event{Name: "keys.json", Op: fsnotify.Write}
			time.Sleep(60 * time.Millisecond) // the bubble's clock: within one settle period
		}
		synctest.Wait()
		if lp.changed.Load() != 0 {
			t.Fatalf("Changed called %d times during the burst, want 0", lp.changed.Load())
		}
		time.Sleep(39 * time.Millisecond) // the bubble's clock: 99 ms after the last change
		synctest.Wait()
		if lp.changed.Load() != 0 {
			t.Fatalf("Changed called before the settle period ended")
		}
		time.Sleep(time.Millisecond) // the bubble's clock: the settle period is over
		synctest.Wait()
		if lp.changed.Load() != 1 {
			t.Fatalf("Changed called %d times after the burst, want 1", lp.changed.Load())
		}
		time.Sleep(time.Second) // the bubble's clock: nothing more happens
		synctest.Wait()
		if lp.changed.Load() != 1 {
			t.Errorf("Changed called %d times in all, want 1", lp.changed.Load())
		}
		lp.end(t)
	})
}

// Zero Settle means DefaultSettle; attribute-only changes are not changes.
func TestDefaultSettleAndChmod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lp := startLoop(0)
		lp.events <- fsnotify.Event{Name: "keys.json", Op: fsnotify.Chmod}
		time.Sleep(time.Hour) // the bubble's clock
		synctest.Wait()
		if lp.changed.Load() != 0 {
			t.Fatalf("a chmod called Changed")
		}
		start := time.Now()
		lp.events <- fsnotify.Event{Name: "keys.json", Op: fsnotify.Rename}
		for lp.changed.Load() == 0 {
			time.Sleep(time.Millisecond) // the bubble's clock
			synctest.Wait()
		}
		if got := time.Since(start); got != DefaultSettle {
			t.Errorf("Changed came %v after the change, want DefaultSettle %v", got, DefaultSettle)
		}
		lp.end(t)
	})
}

// A watch error is reported, then the files are read (events were lost).
func TestErrorReportedThenChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lp := startLoop(10 * time.Millisecond)
		overflow := errors.New("queue overflow")
		lp.errs <- overflow
		synctest.Wait()
		errs := lp.errors.Load()
		if errs == nil || len(*errs) != 1 || (*errs)[0] != overflow || lp.changed.Load() != 0 {
			t.Fatalf("after an error: errors %v, changed %d", errs, lp.changed.Load())
		}
		time.Sleep(10 * time.Millisecond) // the bubble's clock
		synctest.Wait()
		if lp.changed.Load() != 1 {
			t.Errorf("Changed called %d times after an error, want 1", lp.changed.Load())
		}
		lp.end(t)
	})
}

// A signal calls Signaled at once, not after settling; closed event
// channels (the watch ended) leave signals working.
func TestSignalAtOnceAndAfterWatchEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lp := startLoop(time.Second)
		lp.signal <- struct{}{}
		synctest.Wait()
		if lp.signals.Load() != 1 || lp.changed.Load() != 0 {
			t.Fatalf("signals %d, changed %d; want 1, 0", lp.signals.Load(), lp.changed.Load())
		}
		close(lp.events)
		close(lp.errs)
		lp.signal <- struct{}{}
		synctest.Wait()
		if lp.signals.Load() != 2 {
			t.Errorf("signals %d after the watch ended, want 2", lp.signals.Load())
		}
		lp.end(t)
	})
}

// Signaled defaults to Changed.
func TestSignaledDefaultsToChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		signal := make(chan struct{})
		var changed atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Run(ctx, nil, Loop{Changed: func() { changed.Add(1) }, Signal: signal})
		}()
		signal <- struct{}{}
		synctest.Wait()
		if changed.Load() != 1 {
			t.Errorf("changed %d after a signal with no Signaled, want 1", changed.Load())
		}
		cancel()
		<-done
	})
}

// New watches each directory once and names a directory it cannot watch.
func TestNew(t *testing.T) {
	dir := t.TempDir()
	w, err := New(filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.WatchList(); len(got) != 1 || got[0] != dir {
		t.Errorf("watched %v, want [%s]", got, dir)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	gone := filepath.Join(dir, "gone")
	if _, err := New(filepath.Join(gone, "keys.json")); err == nil || !strings.Contains(err.Error(), gone) {
		t.Errorf("New on a missing directory = %v, want an error naming it", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
