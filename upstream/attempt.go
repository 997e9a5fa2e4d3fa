package upstream

import "context"

// attemptKey is the context key of the *attempts a request belongs to
// (do): ResendCount reads its attempt number, roundTripOnly hands it the
// attempt's deadline to release.
type attemptKey struct{}

// ResendCount returns the number of the attempt a request made by the
// Client is: 0 for the first, 1 for the first retry, and so on (the
// http.request.resend_count of OpenTelemetry's HTTP conventions). It is
// meant for a wrapping ClientConfig.Transport, which reads it from
// req.Context() when RoundTrip starts. Outside a Client's request it is 0.
func ResendCount(ctx context.Context) int {
	if a, ok := ctx.Value(attemptKey{}).(*attempts); ok {
		return int(a.resend.Load())
	}
	return 0
}
