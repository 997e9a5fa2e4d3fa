package testkit

import (
	"io"
	"net/http"
	"testing"
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
