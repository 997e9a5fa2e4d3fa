// Package fleet holds the building blocks that let several edge instances
// share one Redis (or Valkey) in any form operators run it (docs/contract.md section 16:
// one primary, Sentinel, Cluster; TLS with a private CA, ACL users;
// Settings and forms.go): a guarded client (per-call deadline, circuit
// breaker, metrics, spans) and a lease-and-publish store with a coordinator
// so that one instance per brand and mode walks the PMS per TTL. The
// fleet-wide rate limiter is the edge's (edge/ratelimit/redislimit, on
// this client); its in-process fallback is the edge's too (ratelimit.Local).
//
// Contract for callers: every method returns quickly (within the call
// timeout, or at once while the breaker is open) and an error means "use
// the in-process behaviour"; Redis trouble is never a partner's error.
//
// Key names (all namespaced, none holds a secret):
//
//	pe:quota:<brand>:<keyID>      per-key quota (edge/ratelimit/redislimit: a GCRA bucket's TAT)
//	pe:authfail:<brand>:<address> failed-authentication throttle per client address (redislimit)
//	pe:snap:<brand>:<mode>:data   the published snapshot
//	pe:snap:<brand>:<mode>:lease  the load lease
//
// Parts of a key that are long or hold characters outside [A-Za-z0-9._-]
// are replaced by a hash (see KeyPart). Every command and script here
// touches one key, so none is CROSSSLOT in a Cluster; a script that
// touches several must give them one hash tag ({...}).
package fleet
