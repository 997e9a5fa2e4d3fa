package pms

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream"

	"github.com/partner-edge/partner-edge/mapping"
)

// Properties and SnapshotOf rebuild exactly what Snapshot builds: the form
// in which instances share a snapshot loses nothing.
func TestPropertiesRebuildTheSnapshot(t *testing.T) {
	recs := []json.RawMessage{
		record(hotelID(3), "aurora", "LIVE", "2021-01-01T00:00:00Z"),
		record(hotelID(2), "aurora", "TEMP_CLOSED", "2019-01-01T00:00:00Z"),
		record(hotelID(5), "other", "LIVE", "2017-01-01T00:00:00Z"),
		json.RawMessage(`{"hotel_id":"not-a-uuid","brand_code":"aurora"}`),
	}
	f := newFakePMS(t, nil)
	f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		_ = json.NewEncoder(w).Encode(map[string]any{"hotels": recs, "nextCursor": nil})
		return true
	}
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	rejected := 0
	d := NewDirect(newTestClient(t, testConfig(f.srv.URL)), DirectOptions{
		Brand: "aurora", CodeSource: mapping.CodeSourceShortCode, Now: func() time.Time { return now },
		OnReject: func(context.Context, *mapping.Rejection) { rejected++ },
	})
	want, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	props, at, err := d.Properties(context.Background())
	if err != nil || !at.Equal(now) || len(props) != 2 || rejected != 4 {
		t.Fatalf("Properties: %d records at %v, %v, %d rejected; want 2 at %v, 4 rejected over both walks", len(props), at, err, rejected, now)
	}
	got := upstream.SnapshotOf(props, at)
	if got.Len() != want.Len() || !bytes.Equal(got.ActiveJSON(0, 10), want.ActiveJSON(0, 10)) || !got.LoadedAt.Equal(want.LoadedAt) {
		t.Fatalf("rebuilt snapshot differs:\n%s\n%s", got.ActiveJSON(0, 10), want.ActiveJSON(0, 10))
	}
	for _, id := range []string{hotelID(3), hotelID(2)} {
		g, ok1 := got.Get(id)
		w, ok2 := want.Get(id)
		if !ok1 || !ok2 || !bytes.Equal(g.JSON, w.JSON) || g.Active != w.Active {
			t.Errorf("%s differs", id)
		}
	}
}
