package listener

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// certSettle is how long watch waits after the last change in a watched
// directory before reading the files, so that a renewal writing the
// certificate and the key in turn (or an editor's rename dance) is read
// once, whole.
const certSettle = 100 * time.Millisecond

// watch reloads the certificate when its files change, and on every value
// from hup (SIGHUP), until ctx is done. It watches the directories, not the
// files: renewals (certbot, cert-manager's Secret volumes) replace files by
// rename or by swapping a symlink, which a watch on the file itself loses.
// A failed watch set-up is logged; hup still works.
func (c *certStore) watch(ctx context.Context, hup <-chan struct{}) {
	events, errs, stop := c.watchDirs()
	defer stop()
	settle := time.NewTimer(certSettle)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			c.log.Info("reloading the TLS certificate")
			_ = c.reload(true) // logged by reload
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Op != fsnotify.Chmod {
				settle.Reset(certSettle)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			c.log.Warn("TLS certificate watch error", "reason", err.Error())
			settle.Reset(certSettle)
		case <-settle.C:
			_ = c.reload(false) // logged by reload; unchanged files are skipped
		}
	}
}

// watchDirs starts an fsnotify watch of the files' directories. On failure
// it logs and returns nil channels, which never fire.
func (c *certStore) watchDirs() (<-chan fsnotify.Event, <-chan error, func()) {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		for _, dir := range uniq(filepath.Dir(c.certFile), filepath.Dir(c.keyFile)) {
			if err = w.Add(dir); err != nil {
				err = fmt.Errorf("watch %s: %w", dir, err)
				_ = w.Close()
				break
			}
		}
	}
	if err != nil {
		c.log.Warn("TLS certificate files not watched; SIGHUP still reloads", "error", err)
		return nil, nil, func() {}
	}
	// A change between the first load and now raised no event: look once.
	_ = c.reload(false)
	return w.Events, w.Errors, func() { _ = w.Close() }
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}
