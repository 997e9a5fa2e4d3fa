package upstream

import (
	"bytes"
	"io"
)

// readBody reads at most limit+1 bytes of r and returns them in a slice of
// exactly their size. It reads into scratch (kept by the caller from call
// to call) and copies once, so a large body costs one allocation of its own
// size: io.ReadAll would leave about as much again in intermediate chunks,
// and a list walk at MaxWalkBytes would then need twice its bound in heap
// before the collector runs (issue 17: 7.6 MB pages).
func readBody(r io.Reader, limit int64, scratch *bytes.Buffer) ([]byte, error) {
	scratch.Reset()
	_, err := scratch.ReadFrom(io.LimitReader(r, limit+1))
	body := bytes.Clone(scratch.Bytes())
	if body == nil {
		body = []byte{}
	}
	if int64(scratch.Cap()) > 2*limit+bytes.MinRead { // never keep more than a body's worth
		*scratch = bytes.Buffer{}
	}
	return body, err
}
