package observability

import "net/http"

// StatusRecorder is the module's one status-recording ResponseWriter: it
// passes everything through and remembers the final status and the body's
// size, for the server span (Middleware) and for the edge's request
// state (access log, metrics, recovery). Embed it; the zero value with
// ResponseWriter set is ready.
type StatusRecorder struct {
	http.ResponseWriter
	// StatusCode is the final status written: 0 until a header or body is
	// written; interim 1xx answers (but 101) are passed on, not recorded.
	StatusCode int
	// BodyBytes counts the body bytes the underlying writer accepted.
	BodyBytes int64
}

// WriteHeader records the first final status and passes code on.
func (sw *StatusRecorder) WriteHeader(code int) {
	if sw.StatusCode == 0 && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols) {
		sw.StatusCode = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

// Write records 200 when no status was written, and counts the bytes.
func (sw *StatusRecorder) Write(b []byte) (int, error) {
	if sw.StatusCode == 0 {
		sw.StatusCode = http.StatusOK
	}
	n, err := sw.ResponseWriter.Write(b)
	sw.BodyBytes += int64(n)
	return n, err
}

// Flush flushes the underlying writer when it can (as net/http's does): a
// flush sends the header, so 200 is recorded when no status was written.
func (sw *StatusRecorder) Flush() {
	if sw.StatusCode == 0 {
		sw.StatusCode = http.StatusOK
	}
	_ = http.NewResponseController(sw.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (sw *StatusRecorder) Unwrap() http.ResponseWriter { return sw.ResponseWriter }
