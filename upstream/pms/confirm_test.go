package pms

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/partner-edge/partner-edge/upstream"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// strayPMS serves h on raw loopback connections and, from the second
// request on a connection on, writes stray first: an extra answer that a
// PMS (or a proxy) wrote late, arriving just before the real answer of the
// request already on the wire. It is what no HTTP/1.1 client can tell from
// an answer; the test is deterministic, where a real PMS's timing is not.
type strayPMS struct {
	ln    net.Listener
	h     http.Handler
	stray []byte
	wg    sync.WaitGroup

	strays atomic.Int64
	mu     sync.Mutex
	conns  map[string]int // requests per client port
	order  []string       // client port of each request
}

func newStrayPMS(t *testing.T, h http.Handler, stray string) *strayPMS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &strayPMS{ln: ln, h: h, stray: []byte(stray), conns: map[string]int{}}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *strayPMS) URL() string { return "http://" + s.ln.Addr().String() }

func (s *strayPMS) serve(c net.Conn) {
	defer c.Close()
	_, port, _ := net.SplitHostPort(c.RemoteAddr().String())
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[port]++
		s.order = append(s.order, port)
		s.mu.Unlock()
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, req)
		var out bytes.Buffer
		if n > 1 && s.stray != nil {
			out.Write(s.stray)
			s.strays.Add(1)
		}
		res := rec.Result()
		res.ContentLength = int64(rec.Body.Len())
		_ = res.Write(&out)
		if _, err := c.Write(out.Bytes()); err != nil || req.Close {
			return
		}
	}
}

// rawAnswer is a whole HTTP/1.1 answer.
func rawAnswer(status int, body string) string {
	return fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// forgedRecord is a record the PMS never sent, of an id it has.
var forgedRecord = strings.Replace(string(record(hotelID(1), "aurora", "active", "2020-01-01T00:00:00Z")),
	"Hotel", "Forged Hotel", 1)

// refusedClient is a client of url with metrics, and a reader of its
// refusals by reason.
func refusedClient(t *testing.T, url string, edit func(*ClientConfig)) (*Client, func(reason string) float64, *testkit.LogBuffer) {
	t.Helper()
	tel, _ := newTelemetry(t)
	pm, err := upstream.NewPMSMetrics(tel.Meter(), "live")
	if err != nil {
		t.Fatal(err)
	}
	logger, logs := testkit.NewLogger()
	cfg := testConfig(url)
	cfg.Metrics, cfg.Logger = pm, logger
	if edit != nil {
		edit(&cfg)
	}
	c := newTestClient(t, cfg)
	return c, func(reason string) float64 {
		fams := testkit.Scrape(t, tel.MetricsHandler())
		if _, ok := fams["partner_edge_pms_answers_refused_total"]; !ok {
			return 0 // nothing refused yet
		}
		return testkit.Series(t, fams, "partner_edge_pms_answers_refused_total",
			map[string]string{"pms": "live", "reason": reason}).GetCounter().GetValue()
	}, logs
}

// A stray page that would end the walk early (one forged record,
// nextCursor null) is read as a page's answer on a reused connection; the
// page is asked again on a new connection, the walk goes on to its real
// end, and the refusal is counted and logged once for the walk.
func TestStrayEndOfWalkIsNeverPublished(t *testing.T) {
	f := newLocalPMS(hotels(23, "aurora"))
	s := newStrayPMS(t, f, rawAnswer(200, `{"hotels":[`+forgedRecord+`],"nextCursor":null}`))
	c, refused, logs := refusedClient(t, s.URL(), func(c *ClientConfig) { c.PageSize = 5 })
	got, err := listHotels(c, context.Background(), "aurora")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 23 {
		t.Fatalf("%d records, want the 23 of the brand", len(got))
	}
	for i, raw := range got {
		if strings.Contains(string(raw), "Forged") || !strings.Contains(string(raw), hotelID(i+1)) {
			t.Fatalf("record %d = %s, want hotel %s as the PMS sent it", i, raw, hotelID(i+1))
		}
	}
	if s.strays.Load() == 0 {
		t.Fatal("no stray was written")
	}
	if n := refused(upstream.RefusedWalkEnd); n < 1 {
		t.Errorf("walk_end refusals %v, want at least 1", n)
	}
	if n := logs.Count("pms walk refused answers"); n != 1 {
		t.Errorf("%d walk refusal lines, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), `level=WARN msg="pms walk refused answers`) || strings.Contains(logs.String(), "Forged") {
		t.Errorf("the refusal line is not at WARN, or quotes the PMS:\n%s", logs)
	}
}

// A stray 404 read as a get's answer on a reused connection is asked again
// on a new connection: the partner's hotel is found.
func TestStrayNotFoundIsNeverAnswered(t *testing.T) {
	f := newLocalPMS(hotels(3, "aurora"))
	s := newStrayPMS(t, f, rawAnswer(404, `{"error":"hotel_not_found"}`))
	c, refused, _ := refusedClient(t, s.URL(), nil)
	for i := range 6 {
		id := hotelID(i%3 + 1)
		raw, err := c.GetHotel(context.Background(), "aurora", id)
		if err != nil || !strings.Contains(string(raw), id) {
			t.Fatalf("get %d of %s: %.80s, %v; want the record", i, id, raw, err)
		}
	}
	if n := refused(upstream.RefusedNotFound); n < 1 {
		t.Errorf("not_found refusals %v, want at least 1", n)
	}
}

// A stray list page read as a get's answer is no record of the id asked
// (its hotel_id is not at the top): the get is asked again, and the forged
// record is never returned.
func TestStrayListPageIsNeverAGetsRecord(t *testing.T) {
	f := newLocalPMS(hotels(3, "aurora"))
	s := newStrayPMS(t, f, rawAnswer(200, `{"hotels":[`+forgedRecord+`],"nextCursor":null}`))
	c, refused, _ := refusedClient(t, s.URL(), nil)
	for i := range 4 {
		raw, err := c.GetHotel(context.Background(), "aurora", hotelID(1))
		if err != nil || strings.Contains(string(raw), "Forged") || !strings.HasPrefix(string(raw), `{"hotel_id"`) {
			t.Fatalf("get %d: %.80s, %v; want the record as the PMS sent it", i, raw, err)
		}
	}
	if n := refused(upstream.RefusedOtherRecord); n < 1 {
		t.Errorf("other_record refusals %v, want at least 1", n)
	}
}

// An answer that ends something and is confirmed by its new connection
// (here a real 404) is no refusal: the get is NotFound, as the PMS said.
func TestConfirmedAnswerIsNoRefusal(t *testing.T) {
	f := newFakePMS(t, hotels(1, "aurora"))
	c, refused, logs := refusedClient(t, f.srv.URL, nil)
	for range 3 {
		_, err := c.GetHotel(context.Background(), "aurora", hotelID(99))
		wantKind(t, err, upstream.NotFound)
	}
	if n := refused(upstream.RefusedNotFound); n != 0 {
		t.Errorf("not_found refusals %v, want 0: the new connection said 404 too", n)
	}
	if logs.Count("refused") != 0 {
		t.Errorf("a refusal was logged:\n%s", logs)
	}
}

// Over HTTP/2 every answer is framed in its own stream: nothing is asked
// twice.
func TestHTTP2AnswersAreNotConfirmed(t *testing.T) {
	f := newFakePMS(t, nil)
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	c := newTestClient(t, ClientConfig{BaseURL: srv.URL, Transport: tr, Logger: slog.New(slog.DiscardHandler), Now: testkit.From(testkit.Epoch)})
	for range 3 {
		_, err := c.GetHotel(context.Background(), "aurora", hotelID(99))
		wantKind(t, err, upstream.NotFound)
	}
	if n := f.calls.Load(); n != 3 {
		t.Errorf("PMS requests %d, want 3: HTTP/2 answers are not confirmed", n)
	}
}
