package testkit

import (
	"bytes"
	stdgzip "compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Get fetches url with http.Get and returns its status and body; a failed
// request gives status 0 and the error's text, for the test to judge.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// InProcess is an http.RoundTripper that serves each request with Handler
// in the calling goroutine. It opens no socket, so a client using it runs
// inside a testing/synctest bubble, where timers (retry waits, call
// deadlines, a breaker's open timeout) run on the bubble's fake clock.
// A request whose context ended while being served fails with that error,
// as a real transport's would.
type InProcess struct{ Handler http.Handler }

// RoundTrip implements http.RoundTripper.
func (p InProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.Handler.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}

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
