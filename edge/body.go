package edge

import (
	"net/http"
	"time"
)

// announcesBody reports whether a request announced a body by any means:
// Content-Length > 0, Transfer-Encoding (net/http removes a Content-Length
// sent with it, RFC 9112 section 6.3), or an HTTP/2 stream left open for
// DATA frames without a length (ContentLength -1). An HTTP/2 request whose
// HEADERS frame ends the stream has ContentLength 0.
func announcesBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0
}

// closeOnBody marks an HTTP/1 connection for closing after the answer when
// the request announced a body (on every route): a route that takes none
// refuses it unread, and with "Connection: close" net/http does not read
// it before answering (docs/contract.md section 10). Once answered, the
// read deadline is set in the past, so net/http's drain of the body fails
// at once instead of waiting for a trickle. The one exception is a body a
// handler read to its end within the limit (readJSONBody): it unmarks the
// connection, which then serves the next request. HTTP/2 needs nothing:
// the server resets a stream whose body was left unread, and
// Connection: close would end the others.
func closeOnBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 1 || !announcesBody(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header()["Connection"] = connectionClose
		next.ServeHTTP(w, r)
		if !stateFrom(r.Context()).bodyRead {
			_ = http.NewResponseController(w).SetReadDeadline(longAgo)
		}
	})
}

var (
	connectionClose = []string{"close"}
	longAgo         = time.Unix(1, 0)
)
