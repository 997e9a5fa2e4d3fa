package fleet

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// The fleet's record of its last walk's length (docs/contract.md section
// 27): the member that walks and publishes also publishes how long the
// PMS walk took, signed like a snapshot, under its own key
// (SnapKey + ":walk", so ":walk:data" in Redis); every member reads it
// with each load. A member whose first walk of the process is under way
// (a cold fleet after a restart) then answers a partner's 503 with a
// Retry-After from the fleet's last walk rather than from the time its
// own has run.

// walkRecordTTL is how long the record lives without a walk to renew it.
const walkRecordTTL = 24 * time.Hour

// WalkLengths is the fleet's last walk length as this member last read
// it. The zero value is ready (nothing known). Safe for concurrent use.
type WalkLengths struct {
	last atomic.Int64 // nanoseconds; 0: none known
}

// Last is the fleet's last walk's length, 0 when none is known: a
// cache.Config.LastWalk.
func (w *WalkLengths) Last() time.Duration {
	if w == nil {
		return 0
	}
	return time.Duration(w.last.Load())
}

// walkKey names the record of brand and mode's walk length.
func walkKey(snap string) string { return snap + ":walk" }

// read reads the fleet's record into w (nothing on any error:
// a record missing, unreadable or forged is no length).
func (w *WalkLengths) read(ctx context.Context, s SnapshotStore, snap string) {
	if w == nil || s == nil {
		return
	}
	payload, _, _, err := s.Fetch(ctx, walkKey(snap))
	if err != nil || len(payload) != 8 {
		return
	}
	if d := time.Duration(binary.BigEndian.Uint64(payload)); d > 0 && d < 24*time.Hour {
		w.last.Store(int64(d))
	}
}

// publish records d, the length of the walk this member just published,
// in the fleet (best effort) and in w.
func (w *WalkLengths) publish(ctx context.Context, s SnapshotStore, snap string, d time.Duration) {
	if w == nil || s == nil || d <= 0 {
		return
	}
	w.last.Store(int64(d))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(d))
	_ = s.Publish(ctx, walkKey(snap), time.Now().UnixMilli(), b[:], walkRecordTTL)
}
