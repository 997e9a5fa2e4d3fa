package pms

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"

	"github.com/partner-edge/partner-edge/mapping"
)

func TestDirectSnapshotMapsFiltersAndOrders(t *testing.T) {
	legacy := strings.ToUpper(hotelID(7))
	recs := []json.RawMessage{
		record(hotelID(3), "aurora", "LIVE", "2021-01-01T00:00:00Z"),
		record(hotelID(1), "aurora", "LIVE", "2021-01-01T02:00:00+02:00"), // same instant as 3
		record(hotelID(2), "aurora", "TEMP_CLOSED", "2019-01-01T00:00:00Z"),
		record(legacy, "aurora", "LIVE", "2018-06-01T12:00:00-05:00"),
		record(hotelID(5), "other", "LIVE", "2017-01-01T00:00:00Z"),
		json.RawMessage(`{"hotel_id":"not-a-uuid","brand_code":"aurora"}`),
		json.RawMessage(`{"hotel_id":"` + hotelID(6) + `","brand_code":"aurora","display_name":"x","time_zone":"Mars/Base","created_at":"2020-01-01T00:00:00Z","lifecycle":"LIVE"}`),
	}
	// One page holding everything, the other brand's record included, as a
	// drifting PMS might send it.
	f := newFakePMS(t, nil)
	f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		_ = json.NewEncoder(w).Encode(map[string]any{"hotels": recs, "nextCursor": nil})
		return true
	}

	var mu sync.Mutex
	var rejected []mapping.Reason
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	d := NewDirect(newTestClient(t, testConfig(f.srv.URL)), DirectOptions{
		Brand:      "aurora",
		CodeSource: mapping.CodeSourceShortCode,
		Now:        func() time.Time { return now },
		OnReject: func(_ context.Context, r *mapping.Rejection) {
			mu.Lock()
			rejected = append(rejected, r.Reason)
			mu.Unlock()
		},
	})
	s, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !s.LoadedAt.Equal(now) {
		t.Errorf("LoadedAt = %v, want %v", s.LoadedAt, now)
	}
	if s.Len() != 4 {
		t.Errorf("Len = %d, want 4 mappable", s.Len())
	}
	var ids []string
	for _, it := range s.Active {
		ids = append(ids, it.ID)
	}
	want := []string{strings.ToLower(legacy), hotelID(1), hotelID(3)}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("active = %v, want %v", ids, want)
	}
	if it, ok := s.Get(hotelID(2)); !ok || it.Active {
		t.Errorf("inactive hotel 2 = %+v, %v", it, ok)
	}
	it, _ := s.Get(hotelID(1))
	for _, leak := range []string{"internal", "secret-owner", "margin", "brand_code"} {
		if strings.Contains(string(it.JSON), leak) {
			t.Errorf("item JSON leaks %q: %s", leak, it.JSON)
		}
	}
	if !strings.Contains(string(it.JSON), `"code":"SC00"`) || !strings.Contains(string(it.JSON), `"name":"Hotel 0000"`) {
		t.Errorf("item JSON = %s", it.JSON)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rejected) != 3 {
		t.Errorf("rejections = %v, want other_brand, invalid_id, invalid_time_zone", rejected)
	}
}

func TestDirectProperty(t *testing.T) {
	legacy := strings.ToUpper(hotelID(7))
	f := newFakePMS(t, []json.RawMessage{
		record(hotelID(1), "aurora", "DEFLAGGED", "2021-01-01T00:00:00Z"),
		record(legacy, "aurora", "LIVE", "2021-01-01T00:00:00Z"),
		json.RawMessage(`{"hotel_id":"` + hotelID(2) + `","brand_code":"aurora","display_name":"   ","time_zone":"UTC","created_at":"2020-01-01T00:00:00Z"}`),
		record(hotelID(3), "other", "LIVE", "2021-01-01T00:00:00Z"),
	})
	var rejected int
	d := NewDirect(newTestClient(t, testConfig(f.srv.URL)), DirectOptions{
		Brand: "aurora", Now: testkit.NewClock().Now, OnReject: func(context.Context, *mapping.Rejection) { rejected++ },
	})
	ctx := context.Background()

	it, err := d.Property(ctx, hotelID(1))
	if err != nil || it.ID != hotelID(1) || it.Active {
		t.Fatalf("Property(1) = %+v, %v", it, err)
	}
	// A legacy upper-case record is found by its lower-case id.
	if it, err := d.Property(ctx, strings.ToLower(legacy)); err != nil || it.ID != strings.ToLower(legacy) {
		t.Fatalf("Property(legacy) = %+v, %v", it, err)
	}
	for _, id := range []string{hotelID(2), hotelID(3), hotelID(99)} {
		_, err := d.Property(ctx, id)
		wantKind(t, err, upstream.NotFound)
	}
	if rejected != 1 {
		t.Errorf("rejections = %d, want 1 (the empty name; other brand is a PMS 404)", rejected)
	}
}

// A PMS that answers another hotel than asked answers nonsense.
func TestDirectPropertyOtherIDIsBadGateway(t *testing.T) {
	f := newFakePMS(t, nil)
	f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		_, _ = w.Write(record(hotelID(5), "aurora", "LIVE", "2021-01-01T00:00:00Z"))
		return true
	}
	d := NewDirect(newTestClient(t, testConfig(f.srv.URL)), DirectOptions{Brand: "aurora", Now: testkit.NewClock().Now})
	_, err := d.Property(context.Background(), hotelID(1))
	wantKind(t, err, upstream.BadGateway)
}
