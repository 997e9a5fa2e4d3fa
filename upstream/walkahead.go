package upstream

import (
	"bytes"
	"context"
)

// Fetching ahead (ClientConfig.WalkAhead; bench/README.md, "The PMS
// path"): an unpaced walk fetches the next page while it hands over the
// records of this one, so the PMS's work and the edge's overlap; it then
// holds two pages instead of one (docs/resilience.md, "Memory of a walk").

// pageFetch is a page being fetched by a goroutine of its own.
type pageFetch struct {
	done   chan struct{}
	cancel context.CancelFunc
	page   fetched
}

// fetchAhead starts fetching u into buf (page: retries and the breaker
// included). A fetch stopped because the walk ended first is cancelled,
// which the breaker does not count.
func (c *Client) fetchAhead(ctx context.Context, u string, buf *bytes.Buffer) *pageFetch {
	ctx, cancel := context.WithCancel(ctx)
	f := &pageFetch{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(f.done)
		f.page = c.page(ctx, u, buf, false)
	}()
	return f
}

// wait returns the page once fetched: its body (a slice of the buffer it
// was fetched into) or the error of the fetch.
func (f *pageFetch) wait() fetched {
	<-f.done
	f.cancel()
	return f.page
}

// stop abandons a fetch under way (the walk ended before it needed the
// page) and waits for its goroutine: nothing of the walk outlives it, and
// the buffer is free again. A nil fetch is none.
func (f *pageFetch) stop() {
	if f == nil {
		return
	}
	f.cancel()
	<-f.done
}
