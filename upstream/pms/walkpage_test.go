package pms

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// decodeStd is how WalkHotels decoded a page before pageDecoder: one
// json.Unmarshal into a listPage, the reference pageDecoder is held to.
func decodeStd(body []byte) (recs []bodySlice, hotels bool, next *string, err error) {
	var p listPage
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false, nil, err
	}
	return p.Hotels.recs, p.Hotels.set, p.NextCursor, nil
}

// samePage says how two decodings of one page differ ("" when they do
// not): records byte for byte, hotels, nextCursor, and the error's text.
func samePage(gotRecs []bodySlice, gotHotels bool, gotNext *string, gotErr error,
	wantRecs []bodySlice, wantHotels bool, wantNext *string, wantErr error) string {
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		return fmt.Sprintf("error %v, want %v", gotErr, wantErr)
	}
	if gotErr != nil {
		return ""
	}
	if gotHotels != wantHotels {
		return fmt.Sprintf("hotels %v, want %v", gotHotels, wantHotels)
	}
	if (gotNext == nil) != (wantNext == nil) || (gotNext != nil && *gotNext != *wantNext) {
		return fmt.Sprintf("nextCursor %s, want %s", show(gotNext), show(wantNext))
	}
	if len(gotRecs) != len(wantRecs) {
		return fmt.Sprintf("%d records, want %d", len(gotRecs), len(wantRecs))
	}
	for i := range gotRecs {
		if !bytes.Equal(gotRecs[i], wantRecs[i]) {
			return fmt.Sprintf("record %d: %q, want %q", i, gotRecs[i], wantRecs[i])
		}
	}
	return ""
}

func show(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

// pageSeeds are pages of every shape the fast path takes or gives up on.
func pageSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	seeds := [][]byte{
		[]byte(`{"hotels":[{"hotel_id":"a"},{"hotel_id":"b"}],"nextCursor":"c1"}`),
		[]byte(` {"nextCursor":null, "hotels" : [ {} , null, 1, "x", [], true ] } `),
		[]byte(`{"hotels":[],"nextCursor":""}`),
		[]byte(`{"hotels":null,"nextCursor":"c"}`),
		[]byte(`{"hotels":[null]}`),
		[]byte(`{"nextCursor":"c"}`),
		[]byte(`{}`),
		[]byte(`null`),
		[]byte(`[]`),
		[]byte(``),
		[]byte(`{"hotels":{}}`),
		[]byte(`{"hotels":"x"}`),
		[]byte(`{"hotels":[1],"nextCursor":5}`),
		[]byte(`{"hotels":[1],"nextCursor":"a\"b\u00e9"}`),
		[]byte(`{"hotels":[1],"nextCursor":"caf\xc3\xa9"}`),
		[]byte(`{"hotels":[1],"nextCursor":"\xff"}`),
		[]byte(`{"hotels":[{"n":"\xff"}]}`),
		[]byte(`{"Hotels":[1],"NEXTCURSOR":"c"}`),
		[]byte(`{"hotelſ":[1]}`),
		[]byte(`{"hot\u0065ls":[1]}`),
		[]byte(`{"hotels":[1],"hotels":[2]}`),
		[]byte(`{"hotels":[1],"hotels":null}`),
		[]byte(`{"hotels":null,"hotels":[2]}`),
		[]byte(`{"hotels":[1],"nextCursor":"a","nextCursor":null}`),
		[]byte(`{"hotels":[{"a":1,"a":2}]}`),
		[]byte(`{"hotels":[1]} x`),
		[]byte(`{"hotels":[1]}{}`),
		[]byte(`{"hotels":[1,]}`),
		[]byte(`{"hotels":[1 2]}`),
		[]byte(`{"hotels":[01]}`),
		[]byte(`{"hotels":[{"x":"\ud800"}]}`),
		[]byte(`{"other":{"hotels":[1]},"hotels":[2],"x":[1,{"y":null}]}`),
		[]byte("\ufeff{\"hotels\":[]}"),
		[]byte(`{"hotels":[1]`),
	}
	// Pages of the simulator: the shape a PMS sends, unmappable records
	// and a nextCursor included.
	srv := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 3, Brands: 1, HotelsPerBrand: 40, PageSize: 4}))
	defer srv.Close()
	cursor := ""
	for range 10 {
		u := srv.URL + "/internal/v2/brands/aurora/hotels?limit=4"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		resp, err := srv.Client().Get(u)
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, body)
		var p listPage
		if err := json.Unmarshal(body, &p); err != nil || p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	return seeds
}

// TestDecodePageMatchesEncodingJSON: on every seed page, pageDecoder gives
// what json.Unmarshal into a listPage gave, reusing its buffers from page
// to page as a walk does.
func TestDecodePageMatchesEncodingJSON(t *testing.T) {
	var d pageDecoder
	fast := 0
	for _, body := range pageSeeds(t) {
		if _, _, _, ok := d.fast(body); ok {
			fast++
		}
		gr, gh, gn, gerr := d.decode(body)
		wr, wh, wn, werr := decodeStd(body)
		if diff := samePage(gr, gh, gn, gerr, wr, wh, wn, werr); diff != "" {
			t.Errorf("%q: %s", body, diff)
		}
	}
	// The simulator's pages (and the plain seeds) take the fast path:
	// the test would pass on encoding/json alone otherwise.
	if fast < 10 {
		t.Errorf("%d pages took the fast path, want at least 10", fast)
	}
}

// TestDecodePageKeepsNoPage: between pages the decoder holds no alias of
// the last page's body.
func TestDecodePageKeepsNoPage(t *testing.T) {
	var d pageDecoder
	body := []byte(`{"hotels":[{"hotel_id":"a"}],"nextCursor":"c"}`)
	if _, _, _, err := d.decode(body); err != nil {
		t.Fatal(err)
	}
	if d.in.Cap() != 0 {
		t.Errorf("decoder keeps a buffer of %d bytes, the page's", d.in.Cap())
	}
}

// FuzzDecodePageMatchesEncodingJSON: for any page bytes, pageDecoder's
// records, hotels, nextCursor and error are encoding/json's.
func FuzzDecodePageMatchesEncodingJSON(f *testing.F) {
	for _, s := range pageSeeds(f) {
		f.Add(s)
	}
	var d pageDecoder // reused across inputs, as a walk reuses it
	f.Fuzz(func(t *testing.T, body []byte) {
		gr, gh, gn, gerr := d.decode(body)
		wr, wh, wn, werr := decodeStd(body)
		if diff := samePage(gr, gh, gn, gerr, wr, wh, wn, werr); diff != "" {
			t.Fatalf("%q: %s", body, diff)
		}
	})
}

// A walk over the simulator decodes its pages with pageDecoder and hands
// over every record: BenchmarkWalkHotels times the walk of a large brand
// (the cold start's main cost), pages and records counted.
func BenchmarkWalkHotels(b *testing.B) {
	const n = 20_000
	srv := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 1, Brands: 1, HotelsPerBrand: n}))
	b.Cleanup(srv.Close)
	c, err := NewClient(ClientConfig{BaseURL: srv.URL, Now: testkit.From(testkit.Epoch)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		if err := c.WalkHotels(context.Background(), "aurora", func([]byte) error { got++; return nil }); err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("%d records, want %d", got, n)
		}
	}
}
