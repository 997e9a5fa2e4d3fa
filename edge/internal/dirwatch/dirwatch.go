// Package dirwatch is the edge's one file watcher: it calls back when files
// in some directories change, once the changes have settled. The key file
// (edge/keys) and the TLS certificate (edge/listener) are both reloaded
// through it.
//
// It watches directories, not files: editors save by writing a new file and
// renaming it over the old one, renewals (certbot, cert-manager) and
// Kubernetes' mounted ConfigMaps and Secrets swap a symlink in the
// directory; a watch on the file itself loses track after the first swap.
// Any change in a directory leads, after a settling delay, to one call of
// Changed, so a write in several steps is read once, whole; the caller
// compares contents, so unrelated files and repeated events cost a read,
// never a reload.
package dirwatch

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultSettle is Loop.Settle's default: long enough for an editor's or a
// renewal tool's write-and-rename to finish, short enough that a reload is
// prompt.
const DefaultSettle = 100 * time.Millisecond

// New starts watching the directories of files (each directory once:
// fsnotify adds a watched path again as a no-op). The caller must Run the
// watch, or Close it.
func New(files ...string) (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := w.Add(filepath.Dir(f)); err != nil {
			_ = w.Close()
			return nil, fmt.Errorf("watch %s: %w", filepath.Dir(f), err)
		}
	}
	return w, nil
}

// Loop is what Run calls.
type Loop struct {
	// Changed is called Settle after the last change (attribute-only
	// changes do not count) or watch error. Required.
	Changed func()
	// Settle is how long Run waits after the last change before calling
	// Changed; every change restarts the wait. Zero means DefaultSettle
	// (tests pass a tiny one so that they wait on the reload, not on it).
	Settle time.Duration
	// Error is called with a watch error (typically an event queue
	// overflow: events were lost, so Changed follows). Nil: ignored.
	Error func(error)
	// Signal, when it delivers, calls Signaled at once (cmd/edge sends one
	// on SIGHUP). Nil: no signal.
	Signal <-chan struct{}
	// Signaled is called on every value from Signal. Nil: Changed.
	Signaled func()
}

// Run calls l's functions until ctx is done, then closes w. A nil w
// watches nothing: only l.Signal then calls back (a watch that could not be
// set up). Callbacks run on Run's goroutine, one at a time.
func Run(ctx context.Context, w *fsnotify.Watcher, l Loop) {
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
	)
	if w != nil {
		defer w.Close() // waits for fsnotify's own goroutine to end
		events, errs = w.Events, w.Errors
	}
	l.run(ctx, events, errs)
}

// run is Run's loop over fsnotify's channels, apart from fsnotify so that
// its debouncing can be tested with synctest and events made up in the
// test. A nil channel delivers nothing; a closed one is dropped.
func (l Loop) run(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error) {
	if l.Signaled == nil {
		l.Signaled = l.Changed
	}
	if l.Settle <= 0 {
		l.Settle = DefaultSettle
	}
	settle := time.NewTimer(l.Settle)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.Signal:
			l.Signaled()
		case ev, ok := <-events:
			if !ok {
				events = nil // the watch ended: signals still work
				continue
			}
			if ev.Op == fsnotify.Chmod {
				continue // attributes only: the content did not change
			}
			settle.Reset(l.Settle)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if l.Error != nil {
				l.Error(err)
			}
			settle.Reset(l.Settle)
		case <-settle.C:
			l.Changed()
		}
	}
}
