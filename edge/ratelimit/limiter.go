// Package ratelimit is the edge's one family of rate limits: a Limit (a
// token bucket: PerSecond and Burst), the Decision a Limiter gives for one
// call, bucket keys typed by kind (an API key's quota or a client address's
// failed authentications) and the in-process GCRA limiter (Local). The
// fleet-wide one over Redis is its sub-package redislimit, apart so that
// this package (and the key file's, which uses Limit) imports nothing of
// Redis or upstream. The key file's rateLimit, the deployment's default
// quota and the failed-auth throttle are all Limits.
package ratelimit

import (
	"context"
	"math"
	"time"
)

// Limit is a token bucket, as GCRA sees it: Burst units at once, refilled at
// PerSecond units a second (one every 1/PerSecond s). It is also the key
// file's "rateLimit" object (keys.RateLimit) and the deployment's default
// quota (EDGE_RATE_LIMIT, EDGE_RATE_BURST).
type Limit struct {
	// PerSecond is the sustained rate, units a second; > 0 to limit.
	PerSecond float64 `json:"perSecond"`
	// Burst is how many units may be taken at once; >= 1 to limit (see
	// WithDefaultBurst for a zero Burst in configuration).
	Burst int `json:"burst"`
}

// WithDefaultBurst returns l with a Burst of max(1, ceil(PerSecond)) when
// its Burst is zero or less: the deployment's default quota may give a
// rate alone.
func (l Limit) WithDefaultBurst() Limit {
	if l.Burst <= 0 && l.PerSecond > 0 {
		l.Burst = max(1, int(math.Ceil(l.PerSecond)))
	}
	return l
}

// Valid reports whether l limits anything: a positive rate and burst, and a
// bucket that refills from empty within about 30 years (so its arithmetic
// in nanoseconds cannot overflow).
func (l Limit) Valid() bool {
	return l.PerSecond > 0 && l.Burst >= 1 && !math.IsInf(l.PerSecond, 0) &&
		float64(time.Second)/l.PerSecond*float64(l.Burst+1) < 1e18
}

// MinRate is the rate at or below which a Limit of burst cannot be Valid:
// its bucket would take more than 1e18 ns to refill. A configured rate at
// or below it must be refused, never taken as "no limit" (docs/contract.md section 15).
func MinRate(burst int) float64 {
	return float64(time.Second) * float64(burst+1) / 1e18
}

// Interval is the time one unit takes to refill.
func (l Limit) Interval() time.Duration {
	return time.Duration(math.Ceil(float64(time.Second) / l.PerSecond))
}

// Decision is what a Limiter reports for one call of AllowN.
type Decision struct {
	// Allowed: the n units were taken (n = 0: one unit would be allowed now).
	Allowed bool
	// Remaining is how many whole units the bucket holds after the call.
	Remaining int
	// RetryAfter is how long until one more unit (n units when the call
	// was refused) is allowed; 0 when Remaining >= 1.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again.
	ResetAfter time.Duration
}

// Kind is what a bucket limits.
type Kind uint8

const (
	// APIKey is an API key's quota; the Key's ID is the key id (key_...),
	// never the secret.
	APIKey Kind = iota + 1
	// Address is the failed-authentication throttle of a client address;
	// the Key's ID is the address, or the /64 of an IPv6 one.
	Address
)

// Key names one bucket: its kind and an id within the kind, so buckets of
// different kinds never collide whatever their ids hold.
type Key struct {
	Kind Kind
	ID   string
}

// Limiter keeps token buckets by Key, each with its own Limit: Local in
// process (the default), or redislimit.Limiter for a fleet
// (docs/ratelimits.md, "State and bounds; the Redis seam").
//
// AllowN takes n units from the bucket key under l, if the bucket holds
// them, and reports the bucket's state after the call. n = 0 takes nothing:
// it peeks, Allowed then reporting whether one unit would be allowed now.
// A bucket never touched is full. l may differ between calls for one key
// (a reloaded key file): the bucket's state carries over under the new l.
// AllowN must be safe for concurrent use and return quickly: it runs on the
// request path.
//
// An error means the Limiter could not decide (Redis slow or down, ctx
// done); the edge then decides that request with its own Local instead,
// never a partner's error, so a Limiter over Redis needs no fallback of
// its own.
type Limiter interface {
	AllowN(ctx context.Context, key Key, l Limit, n int) (Decision, error)
}
