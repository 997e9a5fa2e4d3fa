// Package fleet holds what lets several edge instances share one Redis (or
// Valkey) in any form operators run it (docs/contract.md section 16; forms.go):
// a guarded client (per-call deadline, circuit breaker, metrics, spans) and
// a lease-and-publish store with a coordinator, so that one instance per
// brand and mode walks the PMS per TTL. The fleet-wide rate limiter is the
// edge's (edge/ratelimit/redislimit, on this client).
//
// Every method returns quickly (within the call timeout, or at once while
// the breaker is open) and an error means "use the in-process behaviour":
// Redis trouble is never a partner's error. Key names (pe:quota:,
// pe:authfail:, pe:snap:...) are in docs/scaling.md, "What is shared and
// what is not"; each command and script touches one key, so none is
// CROSSSLOT in a Cluster (a script that touches several must give them one
// hash tag, {...}).
package fleet
