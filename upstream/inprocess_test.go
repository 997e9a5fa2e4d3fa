package upstream

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
)

// inProcess is an http.RoundTripper that serves each request with h in the
// calling goroutine. It opens no socket, so a client using it runs inside a
// testing/synctest bubble, where timers (retry waits, call deadlines, the
// breaker's open timeout) run on the bubble's fake clock.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}

// localBase is the base URL of PMSs served in process.
const localBase = "http://pms.test"

// newLocalPMS is a fakePMS without a listener: use it with
// localConfig.
func newLocalPMS(hotels []json.RawMessage) *fakePMS { return &fakePMS{hotels: hotels} }

// localConfig is testConfig for h served in process.
func localConfig(h http.Handler) ClientConfig {
	cfg := testConfig(localBase)
	cfg.Transport = inProcess{h}
	return cfg
}
