package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestForward: the proxy floor answers the upstream's status and body for
// the same path and query, with the fixed headers, and 502 when the
// upstream cannot be reached.
func TestForward(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RequestURI() != "/internal/v2/brands/aurora/hotels/h1?x=1" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"id":"h1"}`)
	}))
	defer up.Close()
	front := httptest.NewServer(forward(up.URL))
	defer front.Close()

	res, err := http.Get(front.URL + "/internal/v2/brands/aurora/hotels/h1?x=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != `{"id":"h1"}` || res.Header.Get("Svc-Request-Id") == "" {
		t.Errorf("got %d %q %v, want 200 with the upstream's body and the fixed headers", res.StatusCode, body, res.Header)
	}
	if res, err = http.Get(front.URL + "/elsewhere"); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d, want the upstream's 404", res.StatusCode)
	}

	dead := httptest.NewServer(forward("http://" + up.Listener.Addr().String()))
	defer dead.Close()
	up.Close()
	if res, err = http.Get(dead.URL + "/x"); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Errorf("upstream gone: %d, want 502", res.StatusCode)
	}
}
