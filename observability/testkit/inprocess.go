package testkit

import (
	"net/http"
	"net/http/httptest"
)

// InProcess is an http.RoundTripper that serves each request with Handler
// in the calling goroutine. It opens no socket, so a client using it runs
// inside a testing/synctest bubble, where timers (retry waits, call
// deadlines, a breaker's open timeout) run on the bubble's fake clock.
// A request whose context ended while being served fails with that error,
// as a real transport's would.
type InProcess struct{ Handler http.Handler }

// RoundTrip implements http.RoundTripper.
func (p InProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.Handler.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}
