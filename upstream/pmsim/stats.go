package pmsim

import (
	"net/http"
	"sync"
	"sync/atomic"
)

type kind int

const (
	kindOther kind = iota
	kindList
	kindGet
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

type stats struct {
	requests, lists, gets, faulted, unauthorized atomic.Int64
}

func (c *stats) count(k kind) {
	c.requests.Add(1)
	switch k {
	case kindList:
		c.lists.Add(1)
	case kindGet:
		c.gets.Add(1)
	}
}

// Stats returns the counters.
func (s *Sim) Stats() Stats {
	return Stats{
		Requests:     s.stats.requests.Load(),
		Lists:        s.stats.lists.Load(),
		Gets:         s.stats.gets.Load(),
		Faulted:      s.stats.faulted.Load(),
		Unauthorized: s.stats.unauthorized.Load(),
	}
}

// Requests returns the number of requests handled, of any kind.
func (s *Sim) Requests() int64 { return s.stats.requests.Load() }

// ListRequests returns the number of list requests handled.
func (s *Sim) ListRequests() int64 { return s.stats.lists.Load() }

// GetRequests returns the number of get-one requests handled.
func (s *Sim) GetRequests() int64 { return s.stats.gets.Load() }

// ResetStats sets every counter to zero and forgets the recorded headers.
func (s *Sim) ResetStats() {
	s.stats.requests.Store(0)
	s.stats.lists.Store(0)
	s.stats.gets.Store(0)
	s.stats.faulted.Store(0)
	s.stats.unauthorized.Store(0)
	s.headers.reset()
}

// HeaderLogSize is how many request headers a Sim keeps: the most recent ones.
const HeaderLogSize = 64

type headerLog struct {
	mu   sync.Mutex
	ring []http.Header // oldest first, at most HeaderLogSize
}

func (l *headerLog) record(h http.Header) {
	c := h.Clone()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) == HeaderLogSize {
		copy(l.ring, l.ring[1:])
		l.ring = l.ring[:HeaderLogSize-1]
	}
	l.ring = append(l.ring, c)
}

func (l *headerLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring = nil
}

// LastRequestHeader returns a copy of the headers of the most recent request,
// or nil before the first.
func (s *Sim) LastRequestHeader() http.Header {
	s.headers.mu.Lock()
	defer s.headers.mu.Unlock()
	if len(s.headers.ring) == 0 {
		return nil
	}
	return s.headers.ring[len(s.headers.ring)-1].Clone()
}

// RequestHeaders returns copies of the headers of the most recent requests
// (at most HeaderLogSize), oldest first.
func (s *Sim) RequestHeaders() []http.Header {
	s.headers.mu.Lock()
	defer s.headers.mu.Unlock()
	out := make([]http.Header, len(s.headers.ring))
	for i, h := range s.headers.ring {
		out[i] = h.Clone()
	}
	return out
}
