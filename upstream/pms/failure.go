package pms

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"syscall"

	"github.com/partner-edge/partner-edge/upstream"
)

// What the PMS sends stays inside (docs/contract.md section 22): a failure
// of a PMS call is recorded (logs at every level, spans, /shadow, metric
// labels) as a class and numbers, never with a byte the PMS sent. net/http
// quotes the PMS's bytes in its errors ("malformed MIME header line:
// \"owner_email ...\""), so its errors are turned into classes here, at
// the boundary (the boundary transport and the body it hands up), before
// anything above, the tracing wrapper included, sees them; the
// PMS client's own errors (statusError, answerError...) carry a class and
// never the PMS's text. Cause names the class of any failure.

// Classes of a failed attempt without a usable HTTP answer
// (transportError.class).
const (
	classCanceled          = "canceled"           // the caller's context ended
	classTimeout           = "timeout"            // a deadline passed (the attempt's or the call's)
	classDNS               = "dns"                // the PMS's name did not resolve
	classConnectionRefused = "connection_refused" // nothing listens at the PMS's address
	classDialTimeout       = "dial_timeout"       // no connection within the dial timeout
	classDial              = "dial"               // any other failure to connect
	classTLSUntrusted      = "tls_untrusted"      // the PMS's certificate is not trusted: not retried
	classTLS               = "tls"                // any other TLS failure
	classConnectionReset   = "connection_reset"   // the PMS reset the connection
	classConnectionClosed  = "connection_closed"  // the PMS closed the connection before answering
	classTruncated         = "truncated"          // the answer ended early (closed mid-head or mid-body)
	classMalformedStatus   = "malformed_status"   // a status line net/http cannot read
	classMalformedHeader   = "malformed_header"   // a header line net/http cannot read
	classHeaderTooLarge    = "header_too_large"   // the head passed MaxResponseHeaderBytes
	classInformational     = "too_many_informational"
	classMalformedBody     = "malformed_body" // a chunked body or trailer net/http cannot read
	classStrayBytes        = "stray_bytes"    // the idle guard refused a connection (idleguard.go)
	classProtocol          = "protocol"       // any other breach of HTTP (HTTP/2 errors included)
	classTransport         = "transport"      // anything else
)

// classifyTransport is the one place net/http's errors become classes: err
// failed an attempt before a whole answer was read (RoundTrip, or reading
// the body). The result keeps err for errors.Is and errors.As (deadlines,
// cancellation, RefusalOf), but its text is the class and, when net/http
// quoted the PMS, how many bytes it quoted.
func classifyTransport(err error) *transportError {
	var te *transportError
	if errors.As(err, &te) {
		return te
	}
	class, quoted := transportClass(err)
	return &transportError{class: class, quoted: quoted, err: err}
}

// transportClass is err's class and the length of the PMS's bytes net/http
// quoted in its text (0: none).
func transportClass(err error) (class string, quoted int) {
	var (
		dns   *net.DNSError
		op    *net.OpError
		proto textproto.ProtocolError
		rec   tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return classCanceled, 0
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err) && !isDial(err):
		return classTimeout, 0
	case errors.Is(err, errStrayBytes):
		return classStrayBytes, 0
	case isCertError(err):
		return classTLSUntrusted, 0
	case errors.As(err, &dns):
		return classDNS, 0
	case errors.As(err, &op) && op.Op == "dial":
		switch {
		case errors.Is(op, syscall.ECONNREFUSED):
			return classConnectionRefused, 0
		case op.Timeout():
			return classDialTimeout, 0
		}
		return classDial, 0
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return classConnectionReset, 0
	case errors.Is(err, io.ErrUnexpectedEOF):
		return classTruncated, 0
	case errors.Is(err, io.EOF):
		return classConnectionClosed, 0
	case errors.As(err, &rec):
		return classTLS, 0
	case errors.As(err, &proto):
		// textproto quotes the line it could not read; a head over its
		// bound is "message too large".
		if strings.Contains(string(proto), "too large") {
			return classHeaderTooLarge, 0
		}
		return classMalformedHeader, quotedLen(string(proto))
	}
	// net/http words these in plain errors.New and fmt.Errorf (net/http's
	// response.go, transfer.go, transport.go, internal/chunked.go).
	msg := err.Error()
	for _, m := range netHTTPMessages {
		if strings.Contains(msg, m.text) {
			return m.class, quotedLen(msg)
		}
	}
	if strings.Contains(msg, "tls: ") {
		return classTLS, 0
	}
	return classTransport, 0
}

// netHTTPMessages are the parts of net/http's error texts that tell their
// class; the first that a text contains wins.
var netHTTPMessages = []struct{ text, class string }{
	{"malformed HTTP response", classMalformedStatus},
	{"malformed HTTP status code", classMalformedStatus},
	{"malformed HTTP version", classMalformedStatus},
	{"response headers exceeded", classHeaderTooLarge},
	{"read limit of", classHeaderTooLarge},
	{"too many 1xx", classInformational},
	{"Content-Length", classMalformedHeader},
	{"transfer encoding", classMalformedHeader},
	{"Trailer", classMalformedHeader},
	{"trailer", classMalformedBody},
	{"chunk", classMalformedBody},
	{"server closed idle connection", classConnectionClosed},
	{"http2:", classProtocol},
	{"HTTP response to HTTPS client", classProtocol},
}

// quotedLen is the length of the quoted part of net/http's text (from its
// first double quote on), which is the PMS's: 0 when nothing is quoted.
func quotedLen(msg string) int {
	if i := strings.IndexByte(msg, '"'); i >= 0 {
		return len(msg) - i
	}
	return 0
}

// isDial reports whether err failed connecting (a dial's timeout is
// dial_timeout, not timeout).
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// jsonOffset is where encoding/json stopped reading a body it refused (0:
// it did not say).
func jsonOffset(err error) int64 {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return syn.Offset
	case errors.As(err, &typ):
		return typ.Offset
	}
	return 0
}

func (e *transportError) Cause() string     { return e.class }
func (e *statusError) Cause() string        { return "status_" + strconv.Itoa(e.status) }
func (e *answerError) Cause() string        { return e.class }
func (e *sheddingError) Cause() string      { return "shed_" + strconv.Itoa(e.status) }
func (e *heldError) Cause() string          { return "held" }
func (e *breakerOpenError) Cause() string   { return "breaker_open" }
func (e *callerGoneError) Cause() string    { return upstream.Cause(e.err) }
func (e *transportError) ErrorType() string { return e.class } // OTel's error.type

// refusalOf says whether err, the failure of a call or walk, is the PMS
// refusing the edge: the class and a detail ("http_401", "http_403";
// "dns", "connection_refused", "dial_timeout", "dial", "tls_untrusted"),
// or "" for any other failure.
func refusalOf(err error) (upstream.Refusal, string) {
	var se *statusError
	if errors.As(err, &se) {
		switch se.status {
		case http.StatusUnauthorized:
			return upstream.RefusedCredentials, "http_401"
		case http.StatusForbidden:
			return upstream.RefusedCredentials, "http_403"
		}
		return "", ""
	}
	var te *transportError
	if !errors.As(err, &te) {
		return "", ""
	}
	var (
		dns *net.DNSError
		op  *net.OpError
	)
	switch {
	case isCertError(te.err):
		return upstream.Unreachable, "tls_untrusted"
	case errors.As(te.err, &dns):
		return upstream.Unreachable, "dns"
	case errors.As(te.err, &op) && op.Op == "dial":
		switch {
		case errors.Is(op, syscall.ECONNREFUSED):
			return upstream.Unreachable, "connection_refused"
		case op.Timeout():
			return upstream.Unreachable, "dial_timeout"
		}
		return upstream.Unreachable, "dial"
	}
	return "", ""
}

// RefusedBy is upstream.RefusalOf's question asked of a status answer.
func (e *statusError) RefusedBy() (upstream.Refusal, string) { return refusalOf(e) }

// RefusedBy is upstream.RefusalOf's question asked of a failed connection.
func (e *transportError) RefusedBy() (upstream.Refusal, string) { return refusalOf(e) }
