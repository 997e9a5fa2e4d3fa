package upstream

import "context"

// CallerIDs identify the partner request on whose behalf the PMS is called.
// The client sends them as X-Request-Id and X-Correlation-Id.
type CallerIDs struct {
	RequestID     string
	CorrelationID string // empty when the partner sent none (or an invalid one)
}

// CallerIDsKey is the context key of the CallerIDs, held as a *CallerIDs.
// A context of its own (the edge's request context) may answer
// Value(CallerIDsKey{}) with one directly, rather than wrapping itself
// with WithCallerIDs; what it points to must not change while the context
// is in use.
type CallerIDsKey struct{}

// WithCallerIDs returns ctx carrying ids.
func WithCallerIDs(ctx context.Context, ids CallerIDs) context.Context {
	return context.WithValue(ctx, CallerIDsKey{}, &ids)
}

// CallerIDsFrom returns the ids carried by ctx, or zero values.
func CallerIDsFrom(ctx context.Context) CallerIDs {
	if ids, ok := ctx.Value(CallerIDsKey{}).(*CallerIDs); ok && ids != nil {
		return *ids
	}
	return CallerIDs{}
}
