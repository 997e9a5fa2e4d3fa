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

// Predecessors returns the ids of the records whose holder is id (see
// Holder): the keys it replaced by rotation, and those they replaced, in
// the file's order; none for a key never rotated into. What they own is
// id's (a rotated key's successor keeps its webhook endpoints).
func (s *Store) Predecessors(id string) []string {
	set := s.keys()
	var out []string
	for _, k := range set.all {
		for n, ok := set.next[k.ID]; ok; n, ok = set.next[n] {
			if n == id {
				out = append(out, k.ID)
				break
			}
		}
	}
	return out
}
