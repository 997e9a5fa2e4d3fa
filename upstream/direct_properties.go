package upstream

import (
	"context"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
)

// Properties lists every record of the brand and maps it, as Snapshot does,
// but returns the mapped records themselves with the load time: the form a
// snapshot is shared in between edge instances (upstream/fleet). Unmappable
// records are left out and reported to OnReject.
func (d *Direct) Properties(ctx context.Context) ([]mapping.Property, time.Time, error) {
	raws, err := d.pms.ListHotels(ctx, d.opts.Brand)
	if err != nil {
		return nil, time.Time{}, err
	}
	props := make([]mapping.Property, 0, len(raws))
	mo := d.mapOpts()
	for _, raw := range raws {
		p, err := mapping.MapRaw(raw, mo)
		if err != nil {
			d.reject(err)
			continue
		}
		props = append(props, p)
	}
	return props, d.opts.Now(), nil
}

// SnapshotOf builds the Snapshot of mapped records loaded at loadedAt.
func SnapshotOf(props []mapping.Property, loadedAt time.Time) *Snapshot {
	items := make([]*Item, len(props))
	for i, p := range props {
		items[i] = NewItem(p)
	}
	return NewSnapshot(items, loadedAt)
}
