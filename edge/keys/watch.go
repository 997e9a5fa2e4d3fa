package keys

import (
	"context"
	"fmt"
	"os"

	"github.com/partner-edge/partner-edge/edge/internal/dirwatch"
)

// Watch reloads the key file whenever it changes, until ctx is done; it then
// returns nil, having stopped everything it started. It returns an error only
// when the watch cannot be set up.
//
// The file's directory is watched, not the file (edge/internal/dirwatch), so
// editors' renames and Kubernetes' symlink swaps are seen. A change reloads
// the keys, as Reload does, only when the content differs from the content
// last loaded or rejected: other files and repeated events cause no reload,
// and a bad file is logged once. A symlink into another directory whose
// target is edited in place needs SIGHUP (Reload).
func (s *Store) Watch(ctx context.Context) error {
	w, err := dirwatch.New(s.path)
	if err != nil {
		return fmt.Errorf("watch key file %s: %w", s.path, err)
	}
	// A change made between Open and now raised no event: look once.
	s.reload(false) //nolint:errcheck // logged by reload
	if s.watching != nil {
		s.watching()
	}
	dirwatch.Run(ctx, w, dirwatch.Loop{ // closes w, waiting for fsnotify's goroutine
		Changed: func() {
			s.reload(false) //nolint:errcheck // logged by reload
			if s.looked != nil {
				s.looked()
			}
		},
		Error: func(err error) {
			// Typically an event queue overflow: events were lost, so look.
			s.log.Warn("key file watch error", "file", s.path, "reason", err.Error())
		},
	})
	return nil
}

// ReloadOn re-reads the key file on every value of signals (SIGHUP: the
// caller subscribes and unsubscribes) and then calls after (nil: none),
// until ctx is done. A failed reload keeps the old keys; Reload logs the
// outcome.
func (s *Store) ReloadOn(ctx context.Context, signals <-chan os.Signal, after func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-signals:
			s.log.Info("signal: reloading keys", "signal", sig.String())
			_ = s.Reload()
			if after != nil {
				after()
			}
		}
	}
}
