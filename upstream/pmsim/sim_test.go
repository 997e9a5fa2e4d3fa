package pmsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func serve(t *testing.T, cfg Config) (*Sim, *httptest.Server) {
	t.Helper()
	sim := New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv
}

// call does one GET and returns status, headers and body.
func call(t *testing.T, srv *httptest.Server, path string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

type page struct {
	Hotels     []json.RawMessage `json:"hotels"`
	NextCursor *string           `json:"nextCursor"`
}

func listPath(brand string, limit int, cursor string) string {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	p := "/internal/v2/brands/" + brand + "/hotels"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// walk follows the cursor to the end and returns every record and the size
// of each page.
func walk(t *testing.T, srv *httptest.Server, brand string, limit int) ([]json.RawMessage, []int) {
	t.Helper()
	var all []json.RawMessage
	var sizes []int
	cursor := ""
	for range 1000 {
		status, hdr, body := call(t, srv, listPath(brand, limit, cursor))
		if status != http.StatusOK {
			t.Fatalf("list: status %d: %s", status, body)
		}
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("list body: %v: %s", err, body)
		}
		all = append(all, p.Hotels...)
		sizes = append(sizes, len(p.Hotels))
		if p.NextCursor == nil {
			if !bytes.HasSuffix(body, []byte(`"nextCursor":null}`)) {
				t.Fatalf("last page does not send nextCursor null: %s", body)
			}
			return all, sizes
		}
		cursor = *p.NextCursor
	}
	t.Fatal("cursor loop")
	return nil, nil
}

func TestSameSeedSameData(t *testing.T) {
	a, b, c := New(Config{Seed: 7}), New(Config{Seed: 7}), New(Config{Seed: 8})
	if got := a.Brands(); strings.Join(got, ",") != "aurora,borealis,cascade" {
		t.Fatalf("brands %v", got)
	}
	for _, brand := range a.Brands() {
		ra, rb, rc := a.Records(brand), b.Records(brand), c.Records(brand)
		if len(ra) != 40 || len(rb) != 40 {
			t.Fatalf("%s: %d and %d records, want 40", brand, len(ra), len(rb))
		}
		same := 0
		for i := range ra {
			if !bytes.Equal(ra[i], rb[i]) {
				t.Fatalf("%s record %d differs for the same seed:\n%s\n%s", brand, i, ra[i], rb[i])
			}
			if bytes.Equal(ra[i], rc[i]) {
				same++
			}
		}
		if same == len(ra) {
			t.Fatalf("%s: seeds 7 and 8 give the same records", brand)
		}
	}
	if n := len(New(Config{Brands: 14, HotelsPerBrand: 3}).Brands()); n != 14 {
		t.Fatalf("14 brands asked, %d served", n)
	}
	// Over HTTP too: two servers of one seed answer the same bytes.
	_, s1 := serve(t, Config{Seed: 7})
	_, s2 := serve(t, Config{Seed: 7})
	_, _, b1 := call(t, s1, listPath("borealis", 500, ""))
	_, _, b2 := call(t, s2, listPath("borealis", 500, ""))
	if !bytes.Equal(b1, b2) {
		t.Fatal("same seed, different list bodies")
	}
}

func TestPagingWalksEveryRecordOnce(t *testing.T) {
	cases := []struct {
		name            string
		pageSize, limit int
		wantMax         int
	}{
		{"page size caps a large limit", 7, 500, 7},
		{"limit smaller than page size", 7, 3, 3},
		{"limit alone", 0, 6, 6},
		{"default limit", 0, 0, DefaultLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim, srv := serve(t, Config{Seed: 3, HotelsPerBrand: 45, PageSize: tc.pageSize})
			got, sizes := walk(t, srv, "aurora", tc.limit)
			want := sim.Records("aurora")
			if len(got) != len(want) {
				t.Fatalf("walked %d records, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("record %d not as served order says:\n%s\n%s", i, got[i], want[i])
				}
			}
			for i, n := range sizes {
				if n > tc.wantMax || (i < len(sizes)-1 && n != tc.wantMax) {
					t.Fatalf("page sizes %v, want full pages of %d", sizes, tc.wantMax)
				}
			}
		})
	}
}

func TestListEdgeCases(t *testing.T) {
	sim, srv := serve(t, Config{Seed: 1, PageSize: 5})
	status, _, body := call(t, srv, listPath("aurora", 5, ""))
	var p page
	if status != 200 || json.Unmarshal(body, &p) != nil || p.NextCursor == nil {
		t.Fatalf("first page: %d %s", status, body)
	}
	cursor := *p.NextCursor

	bad := []struct{ name, path, code string }{
		{"limit zero", "/internal/v2/brands/aurora/hotels?limit=0", "invalid_limit"},
		{"limit too big", "/internal/v2/brands/aurora/hotels?limit=501", "invalid_limit"},
		{"limit not a number", "/internal/v2/brands/aurora/hotels?limit=ten", "invalid_limit"},
		{"limit empty", "/internal/v2/brands/aurora/hotels?limit=", "invalid_limit"},
		{"limit twice", "/internal/v2/brands/aurora/hotels?limit=2&limit=3", "invalid_limit"},
		{"cursor garbage", "/internal/v2/brands/aurora/hotels?cursor=abc", "invalid_cursor"},
		{"cursor empty", "/internal/v2/brands/aurora/hotels?cursor=", "invalid_cursor"},
		{"cursor of another brand", "/internal/v2/brands/borealis/hotels?cursor=" + cursor, "invalid_cursor"},
		{"cursor edited", "/internal/v2/brands/aurora/hotels?cursor=" + cursor[:len(cursor)-2] + "xx", "invalid_cursor"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := call(t, srv, tc.path)
			if status != http.StatusBadRequest || string(body) != `{"error":"`+tc.code+`"}` {
				t.Fatalf("got %d %s, want 400 %s", status, body, tc.code)
			}
		})
	}
	t.Run("unknown brand is an empty last page", func(t *testing.T) {
		status, _, body := call(t, srv, listPath("zephyr", 10, ""))
		if status != 200 || string(body) != `{"hotels":[],"nextCursor":null}` {
			t.Fatalf("got %d %s", status, body)
		}
	})
	t.Run("limit 1 and 500 accepted", func(t *testing.T) {
		for _, l := range []int{1, 500} {
			if status, _, body := call(t, srv, listPath("aurora", l, "")); status != 200 {
				t.Fatalf("limit %d: %d %s", l, status, body)
			}
		}
	})
	t.Run("a cursor past the data after SetRecords ends the walk", func(t *testing.T) {
		sim.SetRecords("aurora", sim.Records("aurora")[:2])
		status, _, body := call(t, srv, listPath("aurora", 5, cursor))
		if status != 200 || string(body) != `{"hotels":[],"nextCursor":null}` {
			t.Fatalf("got %d %s", status, body)
		}
	})
}

func hotelID(t *testing.T, rec json.RawMessage) string {
	t.Helper()
	var r struct {
		ID string `json:"hotel_id"`
	}
	if err := json.Unmarshal(rec, &r); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func TestGetHotel(t *testing.T) {
	sim, srv := serve(t, Config{Seed: 5})
	recs := sim.Records("aurora")
	var upper json.RawMessage
	for _, r := range recs {
		if id := hotelID(t, r); id != strings.ToLower(id) && strings.Count(id, "-") == 4 {
			upper = r
			break
		}
	}
	if upper == nil {
		t.Fatal("no legacy upper-case record generated")
	}
	upperID := hotelID(t, upper)
	get := func(brand, id string) (int, []byte) {
		status, hdr, body := call(t, srv, "/internal/v2/brands/"+brand+"/hotels/"+id)
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
		return status, body
	}
	for _, tc := range []struct {
		name, brand, id string
		want            json.RawMessage
	}{
		{"plain id", "aurora", hotelID(t, recs[0]), recs[0]},
		{"upper-case id as stored", "aurora", upperID, upper},
		{"upper-case stored, asked lower-case", "aurora", strings.ToLower(upperID), upper},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(tc.brand, tc.id)
			if status != 200 || !bytes.Equal(body, tc.want) {
				t.Fatalf("got %d %s, want the bare record %s", status, body, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, brand, id string }{
		{"unknown id", "aurora", "00000000-0000-4000-8000-000000000000"},
		{"another brand's hotel", "borealis", hotelID(t, recs[0])},
		{"unknown brand", "zephyr", hotelID(t, recs[0])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(tc.brand, tc.id)
			if status != 404 || string(body) != `{"error":"hotel_not_found"}` {
				t.Fatalf("got %d %s", status, body)
			}
		})
	}
}

func TestRoutesAndMethods(t *testing.T) {
	_, srv := serve(t, Config{})
	for _, p := range []string{"/", "/internal/v2/brands/aurora", "/internal/v2/brands/aurora/hotels/", "/internal/v2/brands//hotels",
		"/internal/v2/brands/aurora/hotels/x/y", "/internal/v1/brands/aurora/hotels"} {
		status, _, body := call(t, srv, p)
		if status != 404 || string(body) != `{"error":"not_found"}` {
			t.Errorf("%s: %d %s", p, status, body)
		}
	}
	resp, err := srv.Client().Post(srv.URL+listPath("aurora", 0, ""), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" || string(body) != `{"error":"method_not_allowed"}` {
		t.Fatalf("POST: %d %q %s", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
}

func TestToken(t *testing.T) {
	sim, srv := serve(t, Config{Token: "s3cret"})
	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Basic s3cret", "bearer s3cret "} {
		status, hdr, body := call(t, srv, listPath("aurora", 1, ""), "Authorization", auth)
		if status != 401 || string(body) != `{"error":"unauthorized"}` || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d %s", auth, status, body)
		}
	}
	if status, _, body := call(t, srv, listPath("aurora", 1, ""), "Authorization", "Bearer s3cret"); status != 200 {
		t.Fatalf("right token: %d %s", status, body)
	}
	if st := sim.Stats(); st.Unauthorized != 5 || st.Requests != 6 || st.Lists != 6 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCountersAndHeaders(t *testing.T) {
	sim, srv := serve(t, Config{})
	if len(sim.RequestHeaders()) != 0 {
		t.Fatal("headers before any request")
	}
	call(t, srv, listPath("aurora", 2, ""), "X-Request-Id", "req_1")
	call(t, srv, "/internal/v2/brands/aurora/hotels/nope", "X-Request-Id", "req_2")
	call(t, srv, "/internal/v2/brands/aurora/hotels/nope", "X-Request-Id", "req_3")
	call(t, srv, "/elsewhere", "X-Request-Id", "req_4",
		"X-Correlation-Id", "corr-9", "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"User-Agent", "partner-edge/test", "Authorization", "Bearer t")
	if st := sim.Stats(); st != (Stats{Requests: 4, Lists: 1, Gets: 2, Other: 1, Pages: 1, PageRecords: 2}) {
		t.Fatalf("stats %+v", st)
	}
	if sim.Requests() != 4 || sim.ListRequests() != 1 || sim.GetRequests() != 2 {
		t.Fatal("counter methods disagree with Stats")
	}
	last := func() http.Header { all := sim.RequestHeaders(); return all[len(all)-1] }
	h := last()
	for k, v := range map[string]string{"X-Request-Id": "req_4", "X-Correlation-Id": "corr-9",
		"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"User-Agent":  "partner-edge/test", "Authorization": "Bearer t"} {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	h.Set("X-Request-Id", "mutated")
	if last().Get("X-Request-Id") != "req_4" {
		t.Fatal("RequestHeaders are not copies")
	}
	all := sim.RequestHeaders()
	if len(all) != 4 || all[0].Get("X-Request-Id") != "req_1" {
		t.Fatalf("RequestHeaders: %d, first %q", len(all), all[0].Get("X-Request-Id"))
	}
	for range HeaderLogSize + 3 {
		call(t, srv, "/x")
	}
	if n := len(sim.RequestHeaders()); n != HeaderLogSize {
		t.Fatalf("header log holds %d, want %d", n, HeaderLogSize)
	}
	sim.ResetStats()
	if sim.Stats() != (Stats{}) || len(sim.RequestHeaders()) != 0 {
		t.Fatal("ResetStats left something")
	}
}

func TestSetRecords(t *testing.T) {
	sim, srv := serve(t, Config{PageSize: 2})
	recs := []json.RawMessage{
		json.RawMessage(`{"hotel_id":"a","brand_code":"aurora"}`),
		json.RawMessage(`{"hotel_id":"b","brand_code":"aurora"}`),
		json.RawMessage(`{"hotel_id":"c","brand_code":"aurora"}`),
	}
	sim.SetRecords("aurora", recs)
	recs[0][2] = 'X' // the Sim keeps its own copy
	got, _ := walk(t, srv, "aurora", 10)
	if len(got) != 3 || string(got[0]) != `{"hotel_id":"a","brand_code":"aurora"}` || string(got[2]) != `{"hotel_id":"c","brand_code":"aurora"}` {
		t.Fatalf("served %s", got)
	}
	sim.SetRecords("zephyr", recs[1:2])
	if b := sim.Brands(); b[len(b)-1] != "zephyr" {
		t.Fatalf("brands %v", b)
	}
	if status, _, body := call(t, srv, "/internal/v2/brands/zephyr/hotels/b"); status != 200 || string(body) != string(recs[1]) {
		t.Fatalf("get from new brand: %d %s", status, body)
	}
	if sim.Records("nope") != nil {
		t.Fatal("records of an unknown brand")
	}
}

func TestShuffleEachWalk(t *testing.T) {
	sim, srv := serve(t, Config{Seed: 11, PageSize: 7, ShuffleEachWalk: true})
	_, twin := serve(t, Config{Seed: 11, PageSize: 7, ShuffleEachWalk: true})
	stored := map[string]bool{}
	for _, r := range sim.Records("cascade") {
		stored[string(r)] = true
	}
	join := func(recs []json.RawMessage) string {
		var b strings.Builder
		for _, r := range recs {
			b.Write(r)
			b.WriteByte('\n')
		}
		return b.String()
	}
	var orders []string
	for range 3 {
		got, _ := walk(t, srv, "cascade", 100)
		seen := map[string]bool{}
		for _, r := range got {
			if !stored[string(r)] || seen[string(r)] {
				t.Fatalf("walk served a record twice or not stored: %s", r)
			}
			seen[string(r)] = true
		}
		if len(seen) != len(stored) {
			t.Fatalf("walk served %d of %d records", len(seen), len(stored))
		}
		orders = append(orders, join(got))
	}
	if orders[0] == orders[1] || orders[1] == orders[2] || orders[0] == join(sim.Records("cascade")) {
		t.Fatal("walks are not shuffled each time")
	}
	if got, _ := walk(t, twin, "cascade", 100); join(got) != orders[0] {
		t.Fatal("the first walk of the same seed differs")
	}
}
