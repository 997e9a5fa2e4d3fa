package listener

import (
	"net/http"
	"sync/atomic"
)

// LateHandler serves through the handler set last; until one is set it
// answers 503 "starting". It lets a server listen before its handler can
// be built: the demo's handler needs the address it listens on.
type LateHandler struct{ h atomic.Pointer[http.Handler] }

// Set makes h the handler of every request from now on.
func (l *LateHandler) Set(h http.Handler) { l.h.Store(&h) }

func (l *LateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := l.h.Load()
	if h == nil {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}
