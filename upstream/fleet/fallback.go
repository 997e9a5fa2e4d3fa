package fleet

import "context"

// Fallbacks counts answers given in-process (Client implements it).
type Fallbacks interface {
	Fallback(ctx context.Context, use Use, err error)
}

// FallbackLimiter asks Shared and, when it fails (Redis slow, down, or its
// breaker open), asks Local instead and counts a fallback: a Redis fault
// never becomes an error for the caller. While falling back the quota is
// per instance. ErrBadLimit and Local's own errors are returned.
type FallbackLimiter struct {
	Shared, Local Limiter
	Use           Use
	Count         Fallbacks // nil: not counted
}

// Allow implements Limiter.
func (f *FallbackLimiter) Allow(ctx context.Context, key string, l Limit) (Decision, error) {
	d, err := f.Shared.Allow(ctx, key, l)
	if err == nil || err == ErrBadLimit {
		return d, err
	}
	f.count(ctx, err)
	return f.Local.Allow(ctx, key, l)
}

// Peek implements Limiter.
func (f *FallbackLimiter) Peek(ctx context.Context, key string, l Limit) (Decision, error) {
	d, err := f.Shared.Peek(ctx, key, l)
	if err == nil || err == ErrBadLimit {
		return d, err
	}
	f.count(ctx, err)
	return f.Local.Peek(ctx, key, l)
}

func (f *FallbackLimiter) count(ctx context.Context, err error) {
	if f.Count != nil {
		f.Count.Fallback(ctx, f.Use, err)
	}
}
