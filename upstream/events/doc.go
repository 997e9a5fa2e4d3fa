// Package events is the feed of property changes behind GET /v1/events
// (docs/contract.md section 23): after each complete walk of a PMS, every
// property whose public representation differs from the previous walk's is
// one event (created, updated, removed), kept in order under a position
// derived from the walk, for EDGE_EVENTS_RETENTION and at most
// EDGE_EVENTS_MAX of them in EDGE_EVENTS_MAX_BYTES.
//
// A Feed watches the cache's load (Watch): each new snapshot is diffed
// against the previous one. A single edge keeps its events in memory and,
// with EDGE_DATA_DIR, in a file that outlives a restart (Shared,
// upstream/events/boltevents); a fleet keeps one feed in its Redis (Shared,
// upstream/events/redisevents), appended by the member that walked and read
// by every member into the same in-memory log, so every member answers the
// same events with the same ids. The log is bounded by retention, count and
// bytes (EDGE_EVENTS_MAX_BYTES).
// Cursors (event ids and the list's meta.events.next) are opaque strings
// that name a position; docs/scaling.md, "The events feed", tells the
// design and its cost.
package events
