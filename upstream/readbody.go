package upstream

import (
	"bytes"
	"io"
)

// readBody reads r, a body bounded at limit+1 bytes (r.N on entry: one byte
// past the limit tells a body too large), and returns its bytes in a slice
// of exactly their size. It reads into scratch (kept by the caller from call
// to call) and copies once, so a large body costs one allocation of its own
// size: io.ReadAll would leave about as much again in intermediate chunks,
// and a list walk at MaxWalkBytes would then need twice its bound in heap
// before the collector runs (docs/contract.md section 15: 7.6 MB pages).
func readBody(r *io.LimitedReader, scratch *bytes.Buffer) ([]byte, error) {
	limit := r.N - 1
	scratch.Reset()
	_, err := scratch.ReadFrom(r)
	body := bytes.Clone(scratch.Bytes())
	if body == nil {
		body = []byte{}
	}
	if int64(scratch.Cap()) > 2*limit+bytes.MinRead { // never keep more than a body's worth
		*scratch = bytes.Buffer{}
	}
	return body, err
}
