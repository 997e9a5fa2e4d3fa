// Package redisconn is the edge's one connection to Redis (or Valkey), in
// any form operators run it (docs/contract.md section 16; forms.go): one
// primary, a Sentinel-managed primary, or a Cluster, with TLS and ACL
// users; a guarded client (per-call deadline, circuit breaker, the fence
// that keeps it shut while Redis refuses writes, metrics, spans), its
// health probe, and the start-up announcement. The fleet's snapshot store
// (upstream/fleet), the fleet-wide rate limiter (edge/ratelimit/redislimit)
// and the shared events feed (upstream/events/redisevents) are built on it.
//
// Every method returns quickly (within the call timeout, or at once while
// the breaker is open) and an error means "use the in-process behaviour":
// Redis trouble is never a partner's error.
package redisconn
