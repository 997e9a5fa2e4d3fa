package edge

import (
	"fmt"
	"net/http"

	"github.com/partner-edge/partner-edge/problem"
)

// recoverer turns a panic into 500 INTERNAL_ERROR, without internals in the
// body, when nothing was written yet. http.ErrAbortHandler is re-raised: it
// is net/http's way to abort a response on purpose.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			st := stateFrom(r.Context())
			err := fmt.Errorf("panic: %v", v)
			if st.w.StatusCode != 0 {
				st.cause = err // too late to answer; the access log says why
				return
			}
			s.fail(w, r, &problem.Error{Code: problem.InternalError, Err: err})
		}()
		next.ServeHTTP(w, r)
	})
}
