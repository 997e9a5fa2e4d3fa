package fleet

import "context"

// Fallbacks counts answers given in-process because Redis could not give
// them (Client implements it). The edge's redislimit.Limiter counts
// one on each error, then decides with its own in-process limiter.
type Fallbacks interface {
	Fallback(ctx context.Context, use Use, err error)
}
