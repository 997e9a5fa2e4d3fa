package boltwebhooks

import (
	"bytes"
	"sync"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// decoded holds each endpoint's value as last read or written, decoded, so
// that reading a value unchanged since does not decode its JSON again:
// the deliverer's scan lists every endpoint at each Poll and Wake, and a
// delivery's change reads the value the one before wrote. A value is
// found by its bytes, so one that was never committed (a transaction
// rolled back after its write) is never found, and a value changed on
// disk is decoded again. Safe for concurrent use.
type decoded struct {
	mu sync.Mutex
	m  map[string]value // by endpoint id
}

// value is an endpoint's stored bytes and what they decode to.
type value struct {
	raw []byte
	ep  webhooks.Endpoint
	seq uint64
}

// decode is decode(v), v being endpoint id's stored value, from what was
// kept when it is the same bytes; v is copied when kept (bbolt's values
// live as long as their transaction).
func (d *decoded) decode(id string, v []byte) (webhooks.Endpoint, uint64, error) {
	d.mu.Lock()
	c, ok := d.m[id]
	d.mu.Unlock()
	if ok && bytes.Equal(c.raw, v) {
		return c.ep, c.seq, nil
	}
	ep, seq, err := decode(v)
	if err == nil {
		d.keep(id, bytes.Clone(v), ep, seq)
	}
	return ep, seq, err
}

// keep records that raw, a value of endpoint id that is not changed
// afterwards, decodes to ep and seq.
func (d *decoded) keep(id string, raw []byte, ep webhooks.Endpoint, seq uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]value{}
	}
	d.m[id] = value{raw: raw, ep: ep, seq: seq}
}

// forget drops what was kept of endpoint id (deleted).
func (d *decoded) forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, id)
}
