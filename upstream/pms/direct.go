package pms

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/upstream"

	"github.com/partner-edge/partner-edge/mapping"
)

// DirectOptions configure a Direct catalog.
type DirectOptions struct {
	// Brand is the deployment's brand (EDGE_BRAND): the only brand asked
	// of the PMS, and records of any other brand are dropped. Required.
	Brand string
	// CodeSource chooses the source of the public code (EDGE_CODE_SOURCE).
	// Empty means none.
	CodeSource mapping.CodeSource
	// Now stamps Snapshot.LoadedAt. Nil means time.Now.
	Now func() time.Time
	// OnReject is called with every record that cannot be mapped (other
	// brands included), for logs and metrics, with the context of the walk
	// or get that read it (its span, for the mapping.rejected event). Nil
	// means rejections are dropped silently. It may be called concurrently.
	OnReject func(context.Context, *mapping.Rejection)
	// OnRecord, when set, sees every record of a list walk as the PMS sent
	// it, before it is mapped (edge pms check's census of fields). raw is
	// valid during the call only.
	OnRecord func(raw []byte)
}

// Direct is a Catalog that asks the PMS on every call, with no cache. It is
// the innermost Catalog: the cache (package upstream/cache) wraps it.
//
// Deadlines: Direct adds none of its own. A get is bounded by the client's
// CallTimeout, a walk by its WalkTimeout (and either by the caller's
// deadline when earlier). The cache
// runs its loads under context.WithoutCancel(ctx) plus its own deadline,
// so a partner who leaves does not fail the others waiting on the same
// load; it tells what to do with a failure by its Kind (NotFound is an
// answer; BadGateway, Timeout and Unavailable are PMS failures where stale
// data may be served).
type Direct struct {
	pms   *Client
	opts  DirectOptions
	zones *mapping.ZoneCache // time-zone validity, remembered across loads
	// last is the latest snapshot walked: the next walk shares its
	// unchanged items (upstream.SnapshotAfter).
	last atomic.Pointer[upstream.Snapshot]
}

var _ upstream.Catalog = (*Direct)(nil)

// NewDirect returns a Catalog reading from pms.
func NewDirect(pms *Client, opts DirectOptions) *Direct {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Direct{pms: pms, opts: opts, zones: &mapping.ZoneCache{}}
}

func (d *Direct) mapOpts() mapping.Options {
	return mapping.Options{Brand: d.opts.Brand, CodeSource: d.opts.CodeSource, Zones: d.zones}
}

func (d *Direct) reject(ctx context.Context, err error) {
	var rj *mapping.Rejection
	if d.opts.OnReject != nil && errors.As(err, &rj) {
		d.opts.OnReject(ctx, rj)
	}
}

// Snapshot lists every record of the brand and maps it; unmappable records
// are left out and reported to OnReject. An item unchanged since the
// previous walk is that walk's (upstream.SnapshotAfter).
func (d *Direct) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	props, loadedAt, err := d.Properties(ctx)
	if err != nil {
		return nil, err
	}
	s := upstream.SnapshotAfter(d.last.Load(), props, loadedAt)
	d.last.Store(s)
	return s, nil
}

// Property gets one record and maps it. An unmappable record, or one of
// another brand, is NotFound (docs/pms-api.md section 6); a record
// whose id is not the one asked for is BadGateway.
func (d *Direct) Property(ctx context.Context, id string) (*upstream.Item, error) {
	raw, err := d.pms.GetHotel(ctx, d.opts.Brand, id)
	if err != nil {
		return nil, err
	}
	p, err := mapping.MapRaw(raw, d.mapOpts())
	if err != nil {
		d.reject(ctx, err)
		return nil, &upstream.Error{Kind: upstream.NotFound, Err: err}
	}
	if want, _ := mapping.ParseID(id); p.ID != want {
		return nil, &upstream.Error{Kind: upstream.BadGateway, Err: &answerError{reason: "pms answered another hotel than asked"}}
	}
	return upstream.NewItem(p), nil
}
