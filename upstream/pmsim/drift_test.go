package pmsim

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// Drop leaves out exactly N records of the healthy data, mappable ones
// only; Rename and Retype change every record.
func TestDriftRecords(t *testing.T) {
	healthy := New(Config{Seed: 9}).Records("aurora")
	dropped := New(Config{Seed: 9, Drift: Drift{Drop: 3}}).Records("aurora")
	if len(dropped) != len(healthy)-3 {
		t.Fatalf("%d records after dropping 3 of %d", len(dropped), len(healthy))
	}
	kept := map[string]bool{}
	for _, r := range dropped {
		kept[string(r)] = true
	}
	for _, r := range healthy {
		var rec rawRecord
		_ = json.Unmarshal(r, &rec)
		if !kept[string(r)] && unmappable(rec) != "" {
			t.Errorf("an unmappable record was dropped: %s", r)
		}
	}
	renamed := New(Config{Seed: 9, Drift: Drift{Rename: map[string]string{"display_name": "name"}, Retype: []string{"created_at"}}})
	for _, r := range renamed.Records("aurora") {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(r, &m)
		if _, ok := m["display_name"]; ok || m["name"] == nil || !strings.HasPrefix(string(m["created_at"]), `{"value":`) {
			t.Fatalf("drifted record: %s", r)
		}
	}
}

// Each paging mode breaks the walk the way its doc says.
func TestDriftPaging(t *testing.T) {
	get := func(srv *httptest.Server, cursor string) map[string]json.RawMessage {
		u := srv.URL + "/internal/v2/brands/aurora/hotels?limit=500"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		res, err := srv.Client().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]json.RawMessage
		_ = json.NewDecoder(res.Body).Decode(&m)
		return m
	}
	cursorOf := func(m map[string]json.RawMessage) string {
		var c string
		_ = json.Unmarshal(m["nextCursor"], &c)
		return c
	}
	for _, mode := range PagingModes {
		srv := httptest.NewServer(New(Config{Seed: 9, Drift: Drift{Paging: mode}}))
		p1 := get(srv, "")
		var hotels []json.RawMessage
		_ = json.Unmarshal(p1["hotels"], &hotels)
		if len(hotels) != DriftPageSize {
			t.Errorf("%s: first page of %d, want %d", mode, len(hotels), DriftPageSize)
		}
		switch mode {
		case PagingRenameCursor:
			if _, ok := p1["nextCursor"]; ok || p1["next_cursor"] == nil {
				t.Errorf("%s: %v", mode, p1)
			}
		case PagingLoop:
			c1 := cursorOf(p1)
			if c2 := cursorOf(get(srv, c1)); c2 != c1 {
				t.Errorf("%s: page 2 hands out %q, want %q again", mode, c2, c1)
			}
		case PagingEmptyCursor:
			c, last := cursorOf(p1), p1
			for c != "" {
				last = get(srv, c)
				c = cursorOf(last)
			}
			if string(last["nextCursor"]) != `""` {
				t.Errorf("%s: last page nextCursor %s", mode, last["nextCursor"])
			}
		case PagingOverlap:
			var next []json.RawMessage
			_ = json.Unmarshal(get(srv, cursorOf(p1))["hotels"], &next)
			if string(next[0]) != string(hotels[len(hotels)-1]) {
				t.Errorf("%s: page 2 does not start with page 1's last record", mode)
			}
		}
		srv.Close()
	}
	if err := (Drift{Paging: "sideways"}).Validate(); err == nil {
		t.Error("unknown paging mode accepted")
	}
}
