package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// A late stray answer never becomes partner data (docs/contract.md section
// 22), through the real edge binary against rawPMS: a PMS that writes an
// extra answer 5 ms or 30 ms after each real one, while the edge's next
// request may already be on the wire. The strays are a list page of one
// forged record with nextCursor null (a walk it ended would lose most of
// the brand) and a 404 (a get it answered would lose a hotel). Over six
// bursts of 60 partner requests: no forged name, no 404 for a hotel the
// PMS has, every list with the true total; the refusals are counted.

// strayID is the id of the forged record: no hotel of the PMS has it.
const strayID = "0badc0de-0000-4000-8000-00000000dead"

var (
	strayHotelID = regexp.MustCompile(`"hotel_id"\s*:\s*"[^"]*"`)
	strayActive  = regexp.MustCompile(`"lifecycle"\s*:\s*"[^"]*"`)
)

// strayPage is a whole answer that ends a walk at once: a list page of one
// forged record (strayID, forgedName, active, otherwise a record of sim
// that maps) and nextCursor null.
func strayPage(t *testing.T, sim *pmsim.Sim) []byte {
	t.Helper()
	for _, rec := range sim.Records("aurora") {
		if _, err := mapping.MapRaw(rec, mapping.Options{Brand: "aurora"}); err != nil {
			continue
		}
		forged := strayHotelID.ReplaceAll(rec, []byte(`"hotel_id":"`+strayID+`"`))
		forged = forgedDisplayName.ReplaceAll(forged, []byte(`"display_name":"`+forgedName+`"`))
		forged = strayActive.ReplaceAll(forged, []byte(`"lifecycle":"active"`))
		if _, err := mapping.MapRaw(forged, mapping.Options{Brand: "aurora"}); err != nil {
			continue
		}
		return strayAnswer(http.StatusOK, `{"hotels":[`+string(forged)+`],"nextCursor":null}`)
	}
	t.Fatal("no record of the simulator maps")
	return nil
}

// strayNotFound is a whole 404 answer, as the get route answers it.
func strayNotFound(*testing.T, *pmsim.Sim) []byte {
	return strayAnswer(http.StatusNotFound, `{"error":"hotel_not_found"}`)
}

func strayAnswer(status int, body string) []byte {
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// strayPMS is connPMS (a rawPMS in front of a simulator of 1,200 hotels in
// pages of 100) with its simulator.
func strayPMS(t *testing.T) (*pmsim.Sim, *rawPMS) {
	t.Helper()
	sim := pmsim.New(pmsim.Config{Brands: 1, HotelsPerBrand: 1200, PageSize: 100, Seed: 19, Token: "pms-secret-token"})
	s, err := startRawPMS(sim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return sim, s
}

// walks is the number of list walks the PMS saw begin (a list request
// without a cursor).
func (s *rawPMS) walks() int {
	n := 0
	for _, r := range s.Requests() {
		if strings.Contains(r.Path, "/hotels?") && !strings.Contains(r.Path, "cursor=") {
			n++
		}
	}
	return n
}

// refusals reads partner_edge_pms_answers_refused_total by reason from the
// edge's admin listener (admin: its base URL).
func refusals(t *testing.T, admin string) map[string]float64 {
	t.Helper()
	res, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for _, m := range fams["partner_edge_pms_answers_refused_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestPMSLateStrayAnswerIsNeverServed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	for _, stray := range []struct {
		name   string
		answer func(*testing.T, *pmsim.Sim) []byte
	}{{"list-page", strayPage}, {"404", strayNotFound}} {
		for _, after := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond} {
			for _, m := range pmsModes {
				t.Run(fmt.Sprintf("%s/%v/%s", stray.name, after, m.name), func(t *testing.T) {
					t.Parallel()
					sim, s := strayPMS(t)
					p := startPartnerEdge(t, s.URL(), m.ttl, "EDGE_ADMIN_ADDR=127.0.0.1:0")
					admin := waitAdmin(t, p.stderr)
					total, ids := p.truth(t)
					s.Set(rawFaults{StrayAfter: after, Stray: stray.answer(t, sim)})
					client := &http.Client{Timeout: 30 * time.Second}
					for round := range 6 {
						if m.ttl != "0" {
							// The snapshot of the last burst is refreshed
							// by a walk among the strays before this one:
							// partner lists poll until the PMS sees it
							// begin, and are checked too.
							walks := s.walks()
							var polled []pmsAnswer
							testkit.Eventually(t, "a walk begins", func() bool {
								polled = append(polled, p.get(client, "/v1/properties?perPage=100"))
								return s.walks() > walks
							})
							checkAnswers(t, fmt.Sprintf("before burst %d", round+1), polled, total)
						}
						checkAnswers(t, fmt.Sprintf("burst %d", round+1), p.burst(60, ids), total)
					}
					if a := p.get(client, "/v1/properties/"+strayID); a.status != http.StatusNotFound {
						t.Errorf("the forged record's id answered %d, want 404: %.200s", a.status, a.body)
					}
					checkBreakerClosed(t, p)
					checkNoInternals(t, p)
					st := s.Stats()
					if st.Strays == 0 {
						t.Fatalf("no stray was written: %+v", st)
					}
					refused, n := refusals(t, admin), 0.0
					for _, v := range refused {
						n += v
					}
					if n == 0 {
						t.Errorf("%d strays written, none refused: %v", st.Strays, refused)
					}
					// Logged once per walk that refused an answer, at WARN.
					lines := strings.Count(p.stderr.String(), `"level":"WARN","msg":"pms walk refused answers`)
					if walks := s.walks(); lines > walks {
						t.Errorf("%d walk refusal lines for %d walks; want one per walk at most", lines, walks)
					}
					if walkRefused := refused["walk_end"] + refused["cursor_chain"]; m.ttl != "0" && walkRefused > 0 && lines == 0 {
						t.Errorf("walks refused %v answers and said nothing at WARN", walkRefused)
					}
					t.Logf("%d strays written, refused %v, %d walk lines, %d walks", st.Strays, refused, lines, s.walks())
				})
			}
		}
	}
}

// A 408 from the PMS, on a connection it leaves open, is sent again on
// another connection (docs/contract.md section 22): the raw PMS tells
// connections apart by the edge's port.
func TestPMS408IsSentAgainOnAnotherConnection(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	s := connPMS(t)
	p := startPartnerEdge(t, s.URL(), "0")
	_, ids := p.truth(t)
	client := &http.Client{Timeout: 30 * time.Second}
	if a := p.get(client, "/v1/properties/"+ids[0]); a.status != http.StatusOK { // a warm connection
		t.Fatalf("warm-up get: %d %s", a.status, a.body)
	}
	s.Set(rawFaults{Once408: true})
	if a := p.get(client, "/v1/properties/"+ids[1]); a.status != http.StatusOK {
		t.Fatalf("get after a 408: %d %.200s; want 200", a.status, a.body)
	}
	reqs := s.Requests()
	for i, r := range reqs {
		if r.Status != http.StatusRequestTimeout {
			continue
		}
		if i+1 >= len(reqs) || reqs[i+1].Path != r.Path {
			t.Fatalf("the 408'd request was not sent again: %+v", reqs[i:])
		}
		if reqs[i+1].Port == r.Port {
			t.Errorf("sent again on the connection that answered 408 (port %s); want another", r.Port)
		}
		return
	}
	t.Fatalf("no 408 was answered: %+v", reqs)
}
