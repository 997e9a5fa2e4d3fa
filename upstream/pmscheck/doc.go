// Package pmscheck checks a PMS against docs/pms-api.md and the edge's
// mapping (docs/contract.md section 14, edge pms check): it walks the PMS with the
// edge's own client (pms.Client: same paging, retries, bounds and
// deadlines) and its own walk-and-map (pms.Direct), records every
// answer on the way through the client's transport, checks each one
// against the JSON Schemas in schema/ and the paging rules, and reports
// what partners would see (Result) and what differs from a saved one
// (Compare).
package pmscheck
