package keys

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchSettle is how long Watch waits after the last change in the key
// file's directory before reading the file, so that a write in several
// steps, or an editor's save (rename, create, write), is read once, whole.
const watchSettle = 100 * time.Millisecond

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
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch key file %s: %w", s.path, err)
	}
	defer w.Close() // waits for fsnotify's own goroutine to end
	dir := filepath.Dir(s.path)
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watch key file directory %s: %w", dir, err)
	}
	// A change made between Open and now raised no event: look once.
	s.reload(false) //nolint:errcheck // logged by reload
	if s.watching != nil {
		s.watching()
	}

	settle := time.NewTimer(watchSettle)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue // attributes only: the content did not change
			}
			settle.Reset(watchSettle)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Typically an event queue overflow: events were lost, so look.
			s.log.Warn("key file watch error", "file", s.path, "reason", err.Error())
			settle.Reset(watchSettle)
		case <-settle.C:
			s.reload(false) //nolint:errcheck // logged by reload
			if s.looked != nil {
				s.looked()
			}
		}
	}
}
