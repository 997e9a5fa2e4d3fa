package edge

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/partner-edge/partner-edge/problem"
)

// checkAccept answers 406 NOT_ACCEPTABLE unless the request accepts
// application/json: no Accept, or a media range of */*, application/* or
// application/json (any parameters) with q > 0 (docs/contract.md section 4).
func (s *server) checkAccept(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vs, ok := r.Header["Accept"]; ok && !acceptsJSON(vs) {
			s.fail(w, r, problem.New(problem.NotAcceptable, "This API produces application/json only."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func acceptsJSON(vs []string) bool {
	for _, v := range vs {
		if v == "*/*" || v == "application/json" { // what clients send: no parsing
			return true
		}
		for rng := range strings.SplitSeq(v, ",") {
			mt, params, _ := strings.Cut(rng, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt != "*/*" && mt != "application/*" && mt != "application/json" {
				continue
			}
			if qualityPositive(params) {
				return true
			}
		}
	}
	return false
}

// qualityPositive reads the q parameter of a media range; absent is 1, and a
// malformed q counts as 0 (RFC 9110 section 12.4.2).
func qualityPositive(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		name, val, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		return err == nil && q > 0 && q <= 1
	}
	return true
}
