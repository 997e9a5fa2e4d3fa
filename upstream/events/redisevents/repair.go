package redisevents

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/events"
)

// repaired is the state to write again over forged fields, from what
// verifies: the feed's last event is the newest event that verifies (its
// counts with it; w.Prev must not be older than its walk: ErrConflict,
// and the member reads the base), its floor the chain of the oldest event
// (exact: the last event trimmed, or where the feed started), else the
// appending member's floor (w.Floor), else the end of w.Prev. The trims
// start again from there.
func (s *Store) repaired(ctx context.Context, w events.Walk) (state, error) {
	if w.Prev == 0 {
		return state{}, events.ErrConflict // a member with no base cannot diff: it reads the base first
	}
	st := state{epoch: newEpoch(), floor: events.EndOf(w.Prev)}
	if w.Floor != (events.Pos{}) {
		st.floor = w.Floor
	}
	var head []any
	err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		head, err = headScript.Run(ctx, rdb, []string{s.stream}).Slice()
		return err
	})
	if err != nil {
		return state{}, err
	}
	if len(head) == 1 {
		if e, _, ok := s.entry(head[0]); ok {
			st.floor = e.prev
		}
	}
	st.last = st.floor
	newest, err := s.newest(ctx)
	if err != nil || newest == nil {
		return st, err
	}
	if newest.pos.Walk > w.Prev {
		return state{}, events.ErrConflict
	}
	st.last, st.n, st.nb = newest.pos, newest.c, newest.b
	return st, nil
}

// maxTail bounds the entries repaired looks through, newest first, for
// one that verifies: past them it takes none (a stream of forgeries).
const maxTail = 10_000

// newest is the newest entry of the stream that verifies (nil: none
// among the newest maxTail).
func (s *Store) newest(ctx context.Context) (*entry, error) {
	from := "+"
	for seen := 0; seen < maxTail; {
		var es []any
		err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
			es, err = tailScript.Run(ctx, rdb, []string{s.stream}, from, 1000).Slice()
			return err
		})
		if err != nil || len(es) == 0 {
			return nil, err
		}
		for _, e := range es {
			en, pos, ok := s.entry(e)
			if ok {
				return &en, nil
			}
			if pos == (events.Pos{}) {
				return nil, nil
			}
			from = "(" + streamID(pos)
		}
		seen += len(es)
	}
	return nil, nil
}
