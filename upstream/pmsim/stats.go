package pmsim

import (
	"net/http"
	"sync"
)

// Stats counts the requests a Sim has handled since New or ResetStats.
// Every request counts when it arrives, faulty and refused ones included.
type Stats struct {
	Requests     int64 // all requests
	Lists        int64 // list requests (by path, any method)
	Gets         int64 // get-one requests (by path, any method)
	Faulted      int64 // requests answered by a fault (status, reset, bad body)
	Unauthorized int64 // requests refused with 401
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
