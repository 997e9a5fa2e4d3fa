package pmsim

import (
	"net/http"
	"sync"
)

// Stats counts the requests a Sim has handled since New or ResetStats, the
// list pages it served and the changes churn made. Every request counts
// when it arrives, faulty and refused ones included; the control routes
// (control.go) count nowhere.
type Stats struct {
	Requests     int64      `json:"requests"`     // all requests
	Lists        int64      `json:"lists"`        // list requests (by path, any method)
	Gets         int64      `json:"gets"`         // get-one requests (by path, any method)
	Other        int64      `json:"other"`        // requests to no route
	Faulted      int64      `json:"faulted"`      // requests answered by a fault (status, reset, bad body)
	Unauthorized int64      `json:"unauthorized"` // requests refused with 401
	Pages        int64      `json:"pages"`        // list pages answered 200 (a fault may still have spoilt them)
	PageRecords  int64      `json:"pageRecords"`  // records in those pages
	Churn        ChurnStats `json:"churn"`
}

// ChurnStats counts churn's steps and the changes they made, by kind
// (ChurnKinds), in every brand.
type ChurnStats struct {
	Steps   int64 `json:"steps"`
	Changes int64 `json:"changes"`
	Rename  int64 `json:"rename"`
	Status  int64 `json:"status"`
	Replace int64 `json:"replace"`
	Unmap   int64 `json:"unmap"`
	Remap   int64 `json:"remap"`
	Remove  int64 `json:"remove"`
	Create  int64 `json:"create"`
}

// add counts one change of kind.
func (c *ChurnStats) add(kind string) {
	c.Changes++
	switch kind {
	case ChurnRename:
		c.Rename++
	case ChurnStatus:
		c.Status++
	case ChurnReplace:
		c.Replace++
	case ChurnUnmap:
		c.Unmap++
	case ChurnRemap:
		c.Remap++
	case ChurnRemove:
		c.Remove++
	case ChurnCreate:
		c.Create++
	}
}

// stats holds the counters and the headers of the most recent requests.
type stats struct {
	mu      sync.Mutex
	s       Stats
	headers []http.Header // oldest first, at most HeaderLogSize
}

// arrived counts a request of route (Route's) and keeps a copy of its
// headers.
func (c *stats) arrived(route string, h http.Header) {
	h = h.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Requests++
	switch route {
	case RouteList:
		c.s.Lists++
	case RouteGet:
		c.s.Gets++
	default:
		c.s.Other++
	}
	if len(c.headers) == HeaderLogSize {
		c.headers = append(c.headers[:0], c.headers[1:]...)
	}
	c.headers = append(c.headers, h)
}

// inc adds one to n, a counter of c.s.
func (c *stats) inc(n *int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*n++
}

// page counts a list page of n records.
func (c *stats) page(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Pages++
	c.s.PageRecords += int64(n)
}

// churned adds a churn step's counts.
func (c *stats) churned(d ChurnStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &c.s.Churn
	t.Steps += d.Steps
	t.Changes += d.Changes
	t.Rename += d.Rename
	t.Status += d.Status
	t.Replace += d.Replace
	t.Unmap += d.Unmap
	t.Remap += d.Remap
	t.Remove += d.Remove
	t.Create += d.Create
}

// Stats returns the counters.
func (s *Sim) Stats() Stats {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return s.stats.s
}

// Requests returns the number of requests handled, of any kind.
func (s *Sim) Requests() int64 { return s.Stats().Requests }

// ListRequests returns the number of list requests handled.
func (s *Sim) ListRequests() int64 { return s.Stats().Lists }

// GetRequests returns the number of get-one requests handled.
func (s *Sim) GetRequests() int64 { return s.Stats().Gets }

// ResetStats sets every counter to zero and forgets the recorded headers.
func (s *Sim) ResetStats() {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	s.stats.s, s.stats.headers = Stats{}, nil
}

// HeaderLogSize is how many request headers a Sim keeps: the most recent ones.
const HeaderLogSize = 64

// RequestHeaders returns copies of the headers of the most recent requests
// (at most HeaderLogSize), oldest first.
func (s *Sim) RequestHeaders() []http.Header {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	out := make([]http.Header, len(s.stats.headers))
	for i, h := range s.stats.headers {
		out[i] = h.Clone()
	}
	return out
}
