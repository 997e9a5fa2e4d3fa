package edge_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// swapCatalog serves whichever snapshot it holds now.
type swapCatalog struct {
	cur atomic.Pointer[upstream.Snapshot]
}

func (c *swapCatalog) Snapshot(context.Context) (*upstream.Snapshot, error) { return c.cur.Load(), nil }

func (c *swapCatalog) Property(_ context.Context, id string) (*upstream.Item, error) {
	if it, ok := c.cur.Load().Get(id); ok {
		return it, nil
	}
	return nil, &upstream.Error{Kind: upstream.NotFound}
}

// snapshotOf n active properties named after walk, loaded at walk.
func snapshotOf(n int, walk time.Time) *upstream.Snapshot {
	props := make([]mapping.Property, n)
	for i := range props {
		props[i] = mapping.Property{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("Hotel %d of %d", i, walk.Unix()),
			Status: mapping.StatusActive, Timezone: "UTC", CreatedAt: walk.Add(-time.Hour), UpdatedAt: walk}
	}
	return upstream.SnapshotOf(props, walk)
}

// A compressed list page is cached once per snapshot and page, and the
// cache never keeps a replaced snapshot alive: after four walks a brand
// was held four times over (its index, joined JSON and items), the cause
// of a heap four times the snapshot's size.
func TestCompressedPagesPinNoSnapshot(t *testing.T) {
	store, token := liveKeyStore(t)
	cat := &swapCatalog{}
	h := edge.NewServer(edge.Config{Brand: testBrand, DocsURL: testDocsURL}, store, cat, nil)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var replaced []weak.Pointer[upstream.Snapshot]
	for walk := range 5 {
		s := snapshotOf(200, at.Add(time.Duration(walk)*time.Minute))
		cat.cur.Store(s)
		if walk < 4 {
			replaced = append(replaced, weak.Make(s))
		}
		r := httptest.NewRequest(http.MethodGet, "/v1/properties?perPage=100", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("User-Agent", "hold-test/1.0")
		r.Header.Set("Accept-Encoding", "gzip")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("walk %d: %d %q", walk, w.Code, w.Header().Get("Content-Encoding"))
		}
	}
	runtime.GC()
	runtime.GC()
	for i, p := range replaced {
		if p.Value() != nil {
			t.Errorf("the snapshot of walk %d is still alive after it was replaced", i)
		}
	}
	runtime.KeepAlive(h) // its page cache
}
