package testkit

import (
	"bytes"
	stdgzip "compress/gzip"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// DecodeBody decodes an answer's body by its Content-Encoding ("gzip" or
// "zstd"), as a strict client reads it: the standard library's gzip reader
// on one member only, and klauspost's zstd decoder. Any other coding, or a
// body that does not decode, fails t.
func DecodeBody(t testing.TB, coding string, b []byte) []byte {
	t.Helper()
	switch coding {
	case "gzip":
		zr, err := stdgzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("gzip body: %v", err)
		}
		zr.Multistream(false)
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("gzip body: %v", err)
		}
		return out
	case "zstd":
		d, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		out, err := d.DecodeAll(b, nil)
		if err != nil {
			t.Fatalf("zstd body: %v", err)
		}
		return out
	}
	t.Fatalf("unexpected Content-Encoding %q", coding)
	return nil
}
