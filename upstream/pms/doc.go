// Package pms is the edge's HTTP client of one PMS (docs/pms-api.md): one
// go-retryablehttp client over net/http's Transport with the retry decision
// and circuit breaker of docs/resilience.md, paging and bounded walks
// (walk-ahead, the page decoder), the idle guard and the confirmation of
// answers that end something on a reused connection (docs/contract.md
// sections 19 and 22), the classes its failures carry (failure.go: never a
// byte the PMS sent), and Direct, the upstream.Catalog that asks the PMS on
// every call. Its errors are classified by upstream.Classify through the
// interfaces upstream names (Paused, Cause, RefusedBy).
package pms
