package openapitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestCheckResponseOverHTTP serves fixtures from a real loopback server and
// checks what a client receives, as the edge's tests do.
func TestCheckResponseOverHTTP(t *testing.T) {
	c := checker(t)
	valid := validReplies(t)
	one := valid[7].reply
	drifted := mutateJSON(t, one.body, func(m map[string]any) { m["data"].(map[string]any)["status"] = "deleted" })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := one
		if r.URL.Query().Get("drift") == "1" {
			r2.body = drifted
		}
		if r.Method != http.MethodGet {
			r2 = problemReply(r.Method, r.URL.EscapedPath(), problemFor("METHOD_NOT_ALLOWED"))
		}
		for k, vs := range r2.header {
			w.Header()[k] = vs
		}
		w.WriteHeader(r2.status)
		_, _ = w.Write(r2.body)
	}))
	defer srv.Close()

	do := func(method, target string) error {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return c.CheckResponse(req, res, body)
	}
	if err := do("GET", propPath); err != nil {
		t.Errorf("valid response over HTTP: %v", err)
	}
	if err := do("HEAD", propPath); err != nil {
		t.Errorf("HEAD 405 over HTTP (no body): %v", err)
	}
	if err := do("POST", propPath); err != nil {
		t.Errorf("POST 405 over HTTP: %v", err)
	}
	if err := do("GET", propPath+"?drift=1"); err == nil || !strings.Contains(err.Error(), "/data/status") {
		t.Errorf("drifted response over HTTP: %v, want a failure at /data/status", err)
	}
	if err := c.CheckResponse(nil, nil, nil); err == nil {
		t.Errorf("nil request and response passed")
	}
}

// TestConcurrentUse shares one Checker among goroutines (run with -race):
// every verdict must be the same as alone.
func TestConcurrentUse(t *testing.T) {
	c := checker(t)
	valid := validReplies(t)
	bad := valid[7].reply
	bad.body = mutateJSON(t, bad.body, func(m map[string]any) { delete(m, "meta") })
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				tc := valid[(g+i)%len(valid)]
				if err := c.Check(tc.method, tc.path, tc.reply.status, tc.reply.header, tc.reply.body); err != nil {
					errs <- fmt.Errorf("%s: %w", tc.name, err)
					return
				}
				if err := c.Check("GET", propPath, bad.status, bad.header, bad.body); err == nil {
					errs <- fmt.Errorf("drifted body passed in goroutine %d", g)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkOpenAPICheck(b *testing.B) {
	c := checker(b)
	r := validReplies(b)[5] // a list of two properties
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Check(r.method, r.path, r.reply.status, r.reply.header, r.reply.body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAPILoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load(docPath); err != nil {
			b.Fatal(err)
		}
	}
}
