package pmsim

import (
	"math/rand/v2"
	"net/http"
	"sync"
)

type faultState struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// applyFaults reports whether the request should be served normally.
func (s *Sim) applyFaults(w http.ResponseWriter, r *http.Request) bool { return true }
