package edge

import (
	"net/http"

	"github.com/partner-edge/partner-edge/problem"
)

// checkHeaders validates User-Agent and Svc-Correlation-Id, then refuses a
// declared body unless the route's method takes one (docs/contract.md
// sections 4 and 26: its Content-Type, size and JSON are the handler's to
// check, jsonbody.go). All header problems are listed at once; a missing
// User-Agent makes the code MISSING_REQUIRED_HEADER.
func (s *server) checkHeaders(takesBody bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return s.headersChecked(next, takesBody) }
}

func (s *server) headersChecked(next http.Handler, takesBody bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var errs []problem.FieldError
		code := problem.InvalidHeader
		if fe, missing := checkUserAgent(r.Header["User-Agent"]); fe != nil {
			errs = append(errs, *fe)
			if missing {
				code = problem.MissingRequiredHeader
			}
		}
		if !stateFrom(r.Context()).correlationOK {
			errs = append(errs, correlationError(r.Header["Svc-Correlation-Id"]))
		}
		if errs != nil {
			s.fail(w, r, &problem.Error{Code: code, Detail: "One or more request headers are missing or invalid.", Errors: errs})
			return
		}
		if !takesBody && announcesBody(r) { // closeOnBody has marked the connection
			detail := "GET requests take no body."
			if r.Method != http.MethodGet {
				detail = r.Method + " requests to this endpoint take no body."
			}
			s.fail(w, r, &problem.Error{Code: problem.UnexpectedRequestBody, Detail: detail})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func checkUserAgent(vs []string) (fe *problem.FieldError, missing bool) {
	const field = "User-Agent"
	switch {
	case len(vs) == 0 || len(vs) == 1 && vs[0] == "":
		return &problem.FieldError{Field: field, Code: problem.FieldRequired,
			Detail: "User-Agent is required: name the calling software."}, true
	case len(vs) > 1:
		return &problem.FieldError{Field: field, Code: problem.FieldInvalidFormat,
			Detail: "User-Agent must be sent once."}, false
	case len(vs[0]) > 255:
		return &problem.FieldError{Field: field, Code: problem.FieldTooLong,
			Detail: "User-Agent must be at most 255 characters."}, false
	case len(vs[0]) < 3 || !printableASCII(vs[0]):
		return &problem.FieldError{Field: field, Code: problem.FieldInvalidFormat,
			Detail: "User-Agent must be 3 to 255 printable ASCII characters."}, false
	}
	return nil, false
}

func correlationError(vs []string) problem.FieldError {
	fe := problem.FieldError{Field: "Svc-Correlation-Id", Code: problem.FieldInvalidFormat,
		Detail: "Svc-Correlation-Id must be sent once, as 1 to 128 characters of A-Z, a-z, 0-9 and . _ = + / -."}
	if len(vs) == 1 && len(vs[0]) > 128 {
		fe.Code = problem.FieldTooLong
		fe.Detail = "Svc-Correlation-Id must be at most 128 characters."
	}
	return fe
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
