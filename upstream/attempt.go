package upstream

import (
	"context"
	"sync/atomic"
)

type resendKey struct{}

// ResendCount returns the number of the attempt a request made by the
// Client is: 0 for the first, 1 for the first retry, and so on (the
// http.request.resend_count of OpenTelemetry's HTTP conventions). It is
// meant for a wrapping ClientConfig.Transport, which reads it from
// req.Context() when RoundTrip starts. Outside a Client's request it is 0.
func ResendCount(ctx context.Context) int {
	if n, ok := ctx.Value(resendKey{}).(*atomic.Int32); ok {
		return int(n.Load())
	}
	return 0
}

func withResendCounter(ctx context.Context, n *atomic.Int32) context.Context {
	return context.WithValue(ctx, resendKey{}, n)
}
