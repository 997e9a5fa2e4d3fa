package listener

import (
	"context"

	"github.com/partner-edge/partner-edge/edge/internal/dirwatch"
)

// watch reloads the certificate when its files change (edge/internal/dirwatch
// watches their directories: renewals rename files or swap symlinks), and on
// every value from hup (SIGHUP), until ctx is done. A failed watch set-up is
// logged; hup still works.
func (c *certStore) watch(ctx context.Context, hup <-chan struct{}) {
	w, err := dirwatch.New(c.certFile, c.keyFile)
	if err != nil {
		c.log.Warn("TLS certificate files not watched; SIGHUP still reloads", "error", err)
		w = nil
	} else {
		// A change between the first load and now raised no event: look once.
		_ = c.reload(false)
	}
	dirwatch.Run(ctx, w, dirwatch.Loop{
		Changed: func() { _ = c.reload(false) }, // logged by reload; unchanged files are skipped
		Settle:  c.settle,
		Error: func(err error) {
			c.log.Warn("TLS certificate watch error", "reason", err.Error())
		},
		Signal: hup,
		Signaled: func() {
			c.log.Info("reloading the TLS certificate")
			_ = c.reload(true) // logged by reload
		},
	})
}
