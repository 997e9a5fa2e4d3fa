package keys

// Holder returns the record that now holds what the key id owns (a
// webhook endpoint belongs to the key that created it, and a rotated
// key's successor keeps it: docs/webhooks.md): the record id itself, or,
// once it was rotated, its successor (that of its successor...), found as
// `edge keys rotate` finds it (successor: the file keeps no link). False
// when there is no record id (revoked, or never one). The caller decides
// what expiry, suspension, brand and scopes mean, as for Lookup.
func (s *Store) Holder(id string) (*Key, bool) {
	set := s.keys()
	k, ok := set.byID[id]
	if !ok {
		return nil, false
	}
	for range len(set.all) { // a chain, never a cycle: each successor is later in the file
		n, ok := set.next[k.ID]
		if !ok {
			break
		}
		k = set.byID[n]
	}
	return k, true
}
