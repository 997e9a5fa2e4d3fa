// Package fleet lets several edge instances share one walk of the PMS per
// brand and mode per TTL through Redis (docs/contract.md section 16): a
// lease-and-publish snapshot store (authenticated with the fleet secret)
// and a coordinator, so that one instance walks and the others take what
// it published. The Redis connection itself is upstream/redisconn's.
//
// An error from Redis means "load in-process": Redis trouble is never a
// partner's error. Key names (pe:quota:, pe:authfail:, pe:snap:...) are in
// docs/scaling.md, "What is shared and what is not"; each command and
// script touches one key, so none is CROSSSLOT in a Cluster (a script that
// touches several must give them one hash tag, {...}).
package fleet
