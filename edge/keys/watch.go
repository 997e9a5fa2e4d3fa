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
// It watches the file's directory, not the file: editors save by writing a
// new file and renaming it over the old one, and Kubernetes updates a mounted
// ConfigMap or Secret by swapping a symlink in that directory; a watch on the
// file itself would lose track after the first such swap. Any change in the
// directory leads, after a short settling delay, to reading the file; the
// keys are reloaded only when its content differs from the content last
// loaded (or last rejected), so unrelated files in the directory and
// repeated events cause no reload. Reloads go through the same path as
// Reload: a bad file keeps the previous keys and is logged once.
//
// A key file that is a symlink into another directory is followed when that
// symlink is replaced, not when its target is edited in place; use SIGHUP
// (Reload) then.
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
