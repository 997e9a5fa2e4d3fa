package cache

// Ready reports whether the cache holds a snapshot to serve (walked, or
// taken from the fleet's publication) and, when it does not, why: the
// readiness of the edge (docs/operations.md, "Deploying behind a load balancer").
// With TTL 0 nothing is ever held and every read is its own walk: ready.
func (c *Cache) Ready() (ok bool, cause string) {
	if c.disabled || c.cur.Load() != nil {
		return true, ""
	}
	if c.failed.Load() {
		return false, "no snapshot yet: the last walk of the PMS failed; it is walked again after a back-off (see the log's \"pms walk failed\" line)"
	}
	return false, "no snapshot yet: the first walk of the PMS is under way"
}
