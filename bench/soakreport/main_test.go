package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// soakDir writes what bench/soak records for a 100 s run with one fault
// window (40-60 s, 503 allowed): the mixed traffic at 10/s answering code(t)
// and the limited key admitting admitted answers.
func soakDir(t *testing.T, code func(sec int) int, admitted int, samples, probes string) string {
	t.Helper()
	dir := t.TempDir()
	t0 := time.UnixMilli(1_800_000_000_000)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mix, lim strings.Builder
	enc := func(b *strings.Builder, r result) {
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	for ms := 0; ms < 100_000; ms += 100 {
		c := code(ms / 1000)
		r := result{Attack: "mix", Code: c, Timestamp: t0.Add(time.Duration(ms) * time.Millisecond), Latency: time.Millisecond}
		if c == 503 {
			r.Headers = map[string][]string{"Retry-After": {"1"}}
		}
		enc(&mix, r)
	}
	for i := 0; i < 2*admitted; i++ {
		c := 429
		if i%2 == 0 {
			c = 200
		}
		enc(&lim, result{Attack: "limited", Code: c, Timestamp: t0.Add(time.Duration(i) * 100_000 * time.Millisecond / time.Duration(2*admitted))})
	}
	write("mix.jsonl", mix.String())
	write("limited.jsonl", lim.String())
	ms := func(s int) int64 { return t0.UnixMilli() + int64(s)*1000 }
	write("events.tsv", fmt.Sprintf("load\tload\t%d\t%d\t-\nwarmup\twarm-up\t%d\t%d\t-\nfault\tpms-500\t%d\t%d\t502,503\n",
		ms(0), ms(100), ms(0), ms(10), ms(40), ms(60)))
	write("samples.tsv", samples)
	write("keychecks.tsv", probes)
	write("checks.tsv", "")
	return dir
}

func runReport(t *testing.T, dir string) error {
	t.Helper()
	return run([]string{"--dir", dir, "--out", filepath.Join(dir, "soak.md"), "--svg", filepath.Join(dir, "soak.svg"),
		"--duration", "100", "--rate", "10", "--limit-rate", "10", "--limit-burst", "10"}, io.Discard, io.Discard)
}

func TestThresholds(t *testing.T) {
	calm := func(int) int { return 200 }
	// sample: edge0 at SEC s with RSS (KB), goroutines and collections so far.
	sample := func(sec float64, rss, gor, gc int) string {
		return fmt.Sprintf("%d\tedge0\t42\t%d\t%d\t25\t%d\n", 1_800_000_000_000+int64(sec*1000), rss, gor, gc)
	}
	// grown: RSS 50 MB, 30 goroutines, two collections by 40 s; from
	// second from on, rss and gor.
	grown := func(from, rss, gor int) string {
		out := ""
		for s := 0; s <= 100; s += 5 {
			r, g := 51200, 30
			if s >= from {
				r, g = rss, gor
			}
			out += sample(float64(s), r, g, min(s/20, 3))
		}
		return out
	}
	okSamples := grown(1000, 0, 0)
	okProbes := "keys add\tedge0\t110\t1000\t1200\t5000\t1\twant 200, got 200\n"
	cases := []struct {
		name     string
		code     func(int) int
		admitted int
		samples  string
		probes   string
		want     []string // substrings of the breaches; none: passes
	}{
		{"calm", calm, 1010, okSamples, okProbes, nil},
		{"allowed codes in the window", func(s int) int {
			if s >= 45 && s < 50 {
				return 503
			}
			return 200
		}, 1010, okSamples, okProbes, nil},
		{"5xx outside a window", func(s int) int {
			if s == 70 {
				return 502
			}
			return 200
		}, 1010, okSamples, okProbes, []string{"calm after pms-500: 10 partner 5xx outside a fault window"}},
		{"a code not promised", func(s int) int {
			if s == 50 {
				return 500
			}
			return 200
		}, 1010, okSamples, okProbes, []string{"pms-500: 10 answers 500"}},
		{"no answer", func(s int) int {
			if s == 50 {
				return 0
			}
			return 200
		}, 1010, okSamples, okProbes, []string{"pms-500: 10 answers 0"}},
		{"limited key over", calm, 1120, okSamples, okProbes, []string{"the limited key: 1120 admitted",
			"pms-500: the limited key admitted 224 times (1.12x its quota), beyond 213"}},
		{"limited key under", calm, 900, okSamples, okProbes, []string{"the limited key: 900 admitted"}},
		{"goroutines grow", calm, 1010, grown(60, 51200, 60), okProbes,
			[]string{"goroutines grew from 30 to 60"}},
		{"RSS grows after the second collection", calm, 1010, grown(60, 61440, 30), okProbes,
			[]string{"RSS grew from 51200 to 61440 KB"}},
		{"a burst at the end is no growth", calm, 1010, okSamples + sample(100.5, 61440, 60, 3), okProbes, nil},
		{"a key change applied late", calm, 1010, okSamples, okProbes + "keys add\tedge1\t1500\t1000\t1600\t5000\t1\twant 200, got 200\n",
			[]string{"keys add on edge1: applied after 1500 ms"}},
		{"a key change never applied", calm, 1010, okSamples, okProbes + "keys add\tedge1\t-1\t1000\t1600\t5000\t1\twant 200, got 200\n",
			[]string{"keys add on edge1: applied after -1 ms"}},
		{"a key change never seen", calm, 1010, okSamples, okProbes + "keys suspend\tedge2\t120\t1000\t6000\t5000\t0\twant 403, got 200\n",
			[]string{"keys suspend on edge2: want 403, got 200 after 6000 ms"}},
		{"a probe-only check late", calm, 1010, okSamples, okProbes + "redis-failover\tedge2\t-1\t0\t12000\t10000\t1\tshared\n",
			[]string{"redis-failover on edge2: shared after 12000 ms"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := runReport(t, soakDir(t, tc.code, tc.admitted, tc.samples, tc.probes))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want no breach, got %v", err)
				}
				return
			}
			b, ok := err.(breaches)
			if !ok {
				t.Fatalf("want breaches, got %v", err)
			}
			all := strings.Join(b, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("breaches %q lack %q", all, w)
				}
			}
			if len(b) != len(tc.want) {
				t.Errorf("%d breaches, want %d: %q", len(b), len(tc.want), all)
			}
		})
	}
}

// The report names the simulator's profile it was run against (--pms:
// bench/soak's PMS_PROFILE), so a paced run reads apart from a fast one.
func TestReportNamesThePMSProfile(t *testing.T) {
	dir := soakDir(t, func(int) int { return 200 }, 1010, "", "")
	out := filepath.Join(dir, "soak.md")
	_ = run([]string{"--dir", dir, "--out", out, "--duration", "100", "--rate", "10", "--limit-rate", "10", "--limit-burst", "10",
		"--pms", "paced: 50000 hotels, pages of 100 at 50ms"}, io.Discard, io.Discard)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "PMS (the simulator): paced: 50000 hotels, pages of 100 at 50ms.") {
		t.Errorf("the report does not name the PMS profile:\n%.600s", b)
	}
}

// rewrite replaces the JSON lines of file in dir by what f makes of each
// result (nil: dropped) and appends more.
func rewrite(t *testing.T, dir, file string, f func(r result) *result, more ...result) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	add := func(r result) {
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(j, '\n'))
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if n := f(r); n != nil {
			add(*n)
		}
	}
	for _, r := range more {
		add(r)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The report's worst 5-second p99 outside faults is the calm bucket's
// (300 ms at 20-25 s), not the fault window's (900 ms at 45-50 s) nor the
// warm-up's (2 s at 0-5 s), nor that of a bucket only partly in a fault
// window (700 ms at 35-41 s: the bucket 40-45 s overlaps the window); the
// fault's is beside it.
func TestWorstP99OutsideFaults(t *testing.T) {
	dir := soakDir(t, func(int) int { return 200 }, 1010, "", "")
	t0 := time.UnixMilli(1_800_000_000_000)
	rewrite(t, dir, "mix.jsonl", func(r result) *result {
		switch s := r.Timestamp.Sub(t0); {
		case s < 5*time.Second:
			r.Latency = 2 * time.Second
		case s >= 20*time.Second && s < 25*time.Second:
			r.Latency = 300 * time.Millisecond
		case s >= 45*time.Second && s < 50*time.Second:
			r.Latency = 900 * time.Millisecond
		case s >= 40*time.Second && s < 41*time.Second:
			r.Latency = 700 * time.Millisecond
		}
		return &r
	})
	var out strings.Builder
	err := run([]string{"--dir", dir, "--out", filepath.Join(dir, "soak.md"), "--duration", "100", "--rate", "10",
		"--limit-rate", "10", "--limit-burst", "10"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "soak.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up is 0-10 s and the fault 40-60 s: the calm buckets are
	// those of 10-40 s and 60-100 s, 14 of them; 4 overlap the fault.
	for _, want := range []string{
		"| outside faults | **300.0** | 20 | calm after warm-up | 14 |",
		"| in fault windows | **900.0** | 45 | pms-500 | 4 |",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%.1500s", want, b)
		}
	}
	if want := "soakreport: worst 5-second p99 outside faults: 300.0 ms, from 20 s (calm after warm-up)"; !strings.Contains(out.String(), want) {
		t.Errorf("the summary lacks %q:\n%s", want, out.String())
	}
}

// A run with no calm 5 s (a fault from the warm-up's end to the load's)
// says so rather than report a 0 ms worst.
func TestWorstP99NoCalm(t *testing.T) {
	dir := soakDir(t, func(int) int { return 200 }, 1010, "", "")
	ms := func(s int) int64 { return 1_800_000_000_000 + int64(s)*1000 }
	if err := os.WriteFile(filepath.Join(dir, "events.tsv"), fmt.Appendf(nil, "load\tload\t%d\t%d\t-\nwarmup\twarm-up\t%d\t%d\t-\nfault\tpms-500\t%d\t%d\t502,503\n",
		ms(0), ms(100), ms(0), ms(10), ms(10), ms(100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runReport(t, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "soak.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "| outside faults | - | - | - | 0 |"; !strings.Contains(string(b), want) {
		t.Errorf("the report lacks %q:\n%.1500s", want, b)
	}
}

// The limited key's admission is judged per fault window against what the
// docs promise: up to three times burst + rate x s while Redis fails over
// (docs/resilience.md), burst + rate x s plus a refill's lease per edge
// otherwise (docs/scaling.md, "The accuracy bound"). The window is 40-60 s,
// the quota 10/s burst 10; the even traffic admits 202 in it: the shared
// bound is 10 + 200 + 3 = 213, the failover's 630.
func TestLimitedKeyPerFaultWindow(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct {
		fault  string
		extra  int // admissions added in the window
		breach bool
		row    string // the window's row of the report, from its start
	}{
		{"redis-failover", 300, false, "| redis-failover | 20.0 | 502 | 25.1 | 10 | **2.51x** | 630 |"},
		{"redis-failover", 500, true, "| redis-failover | 20.0 | 702 | 35.1 | 10 | **3.51x** | 630 **exceeded** |"},
		{"pms-500", 0, false, "| pms-500 | 20.0 | 202 | 10.1 | 10 | **1.01x** | 213 |"},
		{"pms-500", 11, false, "| pms-500 | 20.0 | 213 | 10.7 | 10 | **1.06x** | 213 |"},
		{"pms-500", 12, true, "| pms-500 | 20.0 | 214 | 10.7 | 10 | **1.07x** | 213 **exceeded** |"},
	} {
		t.Run(fmt.Sprintf("%s+%d", tc.fault, tc.extra), func(t *testing.T) {
			dir := soakDir(t, func(int) int { return 200 }, 1010, "", "")
			ev, err := os.ReadFile(filepath.Join(dir, "events.tsv"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "events.tsv"), []byte(strings.Replace(string(ev), "pms-500", tc.fault, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			var more []result
			for i := range tc.extra {
				more = append(more, result{Attack: "limited", Code: 200, Timestamp: t0.Add(40*time.Second + time.Duration(i)*20*time.Second/time.Duration(tc.extra))})
			}
			rewrite(t, dir, "limited.jsonl", func(r result) *result { return &r }, more...)
			err = runReport(t, dir)
			b, _ := err.(breaches)
			found := strings.Contains(strings.Join(b, "\n"), tc.fault+": the limited key admitted")
			if found != tc.breach {
				t.Errorf("breach for the window: %v, want %v (%v)", found, tc.breach, err)
			}
			md, rerr := os.ReadFile(filepath.Join(dir, "soak.md"))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !strings.Contains(string(md), tc.row) {
				t.Errorf("the report lacks the row %q:\n%.3000s", tc.row, md)
			}
		})
	}
}

// The picture has what a reader needs without the report: titled axes
// with five labelled round ticks each, a legend for the shaded bands and
// each line, and the faults in plain words.
func TestPictureIsReadable(t *testing.T) {
	dir := soakDir(t, func(int) int { return 200 }, 1010, "", "")
	if err := runReport(t, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "soak.svg"))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	for _, want := range []string{
		">seconds since the load began<", // the x axes' title
		// the y axes' titles, with their units
		`rotate(-90 14 143.0)">answers per second<`, `rotate(-90 14 329.0)">5xx per second<`, `rotate(-90 14 515.0)">p99 latency, ms<`,
		"fault being injected",                                                                               // the legend of the bands
		">answers per second, all partner traffic<", ">partner 5xx per second<", ">p99 latency per 5 s, ms<", // and of the lines
		"PMS answers 500", // the fault in plain words
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
	// Five ticks on each of the three y axes, at quarters of a round top:
	// 30 answers a second (10 mixed, 20 of the limited key's 200s and 429s)
	// under 40; no 5xx under 4; a 1 ms p99 under 4.
	var ticks []string
	for _, l := range strings.Split(svg, "\n") {
		if strings.Contains(l, `text-anchor="end" font-size="9"`) {
			ticks = append(ticks, l[strings.Index(l, ">")+1:strings.LastIndex(l, "<")])
		}
	}
	if got, want := strings.Join(ticks, " "), "0 10 20 30 40 0 1 2 3 4 0 1 2 3 4"; got != want {
		t.Errorf("y-axis tick labels %q, want %q", got, want)
	}
	for _, jargon := range []string{"attack", "a second ("} {
		if strings.Contains(svg, jargon) {
			t.Errorf("the picture says %q", jargon)
		}
	}
}

func TestAxisMax(t *testing.T) {
	for _, tc := range []struct{ v, want float64 }{
		{0, 4}, {3.2, 4}, {9, 10}, {11, 20}, {157, 200}, {314, 400}, {2000, 2000}, {2001, 4000}, {12500, 20000},
	} {
		if got := axisMax(tc.v); got != tc.want {
			t.Errorf("axisMax(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
