// Command soakreport reads what bench/soak recorded (vegeta's results as JSON
// lines, the fault windows, the key and certificate probes, the edges'
// resource samples), writes the report and its picture, and exits 1 when a
// threshold of docs/operations.md "Reliability figures" is broken.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "soakreport:", err)
		var b breaches
		if errors.As(err, &b) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

// config is the run as bench/soak describes it, and the thresholds.
type config struct {
	dir, out, svg, mode, machine, commit, ttl string
	pms                                       string // the simulator's profile; empty: not told
	duration                                  int
	rate, limitRate, limitBurst               float64
}

// The thresholds: the limited key's admitted / (rate × seconds + burst);
// each edge's growth in resources after its warm-up, by a share or by an
// amount, whichever is larger.
const (
	admitLow, admitHigh                        = 0.9, 1.1
	growth                                     = 0.10
	growRSSKB, growGoroutines, growFDs float64 = 5 * 1024, 20, 10
	edgeWarm                                   = 20 * time.Second
)

// breaches is every threshold broken: the report is still written.
type breaches []string

func (b breaches) Error() string {
	return fmt.Sprintf("%d thresholds broken:\n  %s", len(b), strings.Join(b, "\n  "))
}

func run(args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("soakreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.dir, "dir", "", "bench/soak's working directory")
	fs.StringVar(&c.out, "out", "", "the report (Markdown)")
	fs.StringVar(&c.svg, "svg", "", "the picture (SVG)")
	fs.StringVar(&c.mode, "mode", "full", "full or short")
	fs.StringVar(&c.machine, "machine", "", "the machine, for the report")
	fs.StringVar(&c.commit, "commit", "", "the commit, for the report")
	fs.StringVar(&c.ttl, "ttl", "", "EDGE_CACHE_TTL, for the report")
	fs.StringVar(&c.pms, "pms", "", "the simulator's profile (fast, or paced pages), for the report")
	fs.IntVar(&c.duration, "duration", 0, "the load's length in seconds")
	fs.Float64Var(&c.rate, "rate", 0, "mixed requests a second")
	fs.Float64Var(&c.limitRate, "limit-rate", 0, "the limited key's rate")
	fs.Float64Var(&c.limitBurst, "limit-burst", 0, "the limited key's burst")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.dir == "" || c.out == "" {
		return errors.New("--dir and --out are required")
	}
	var d data
	if err := d.read(c.dir); err != nil {
		return err
	}
	r := analyse(c, &d)
	if c.svg != "" {
		if err := os.WriteFile(c.svg, []byte(picture(c, &d, r)), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(c.out, []byte(report(c, &d, r)), 0o644); err != nil {
		return err
	}
	for _, w := range []struct {
		name string
		w    worst
	}{{"outside faults", r.calm}, {"in fault windows", r.inFault}} {
		if w.w.buckets > 0 {
			fmt.Fprintf(stdout, "soakreport: worst 5-second p99 %s: %s ms, from %.0f s (%s)\n", w.name, ms(w.w.p99), w.w.at, w.w.in)
		}
	}
	for _, s := range r.segments {
		if s.kind == "fault" {
			fmt.Fprintf(stdout, "soakreport: the limited key in %s: %d admitted, %.2fx its quota (bound %.0f)\n", s.name, s.limited200, quotaRatio(c, s), limitedBound(c, s))
		}
	}
	fmt.Fprintf(stdout, "soakreport: %d requests, %d thresholds broken; written %s\n", r.requests, len(r.breaches), c.out)
	if len(r.breaches) > 0 {
		return r.breaches
	}
	return nil
}

// result is one vegeta result, as `vegeta encode --to json` writes it.
type result struct {
	Attack    string              `json:"attack"`
	Code      int                 `json:"code"`
	Timestamp time.Time           `json:"timestamp"`
	Latency   time.Duration       `json:"latency"`
	Error     string              `json:"error"`
	URL       string              `json:"url"`
	Headers   map[string][]string `json:"headers"`
}

type event struct {
	kind, name string
	start, end time.Time
	allowed    map[int]bool // 5xx codes docs/resilience.md promises in this window
}

type sample struct {
	at              time.Time
	edge, pid       string
	rssKB, gor, fds float64
	gc              float64 // collections so far (go_gc_duration_seconds_count)
	conns           float64 // established connections to the edge's port
}

// probe is one change as one edge took it: when its log said it applied
// the change (-1: no file change, nothing to apply) and when a probe of the
// edge first saw it, both from the change.
type probe struct {
	change, edge, detail    string
	appliedMS, appliedBound int
	probeMS, probeBound     int
	ok                      bool
}

type check struct {
	name, detail string
	ok           bool
}

type data struct {
	mix, limited []result
	events       []event
	samples      []sample
	probes       []probe
	checks       []check
}

func (d *data) read(dir string) error {
	var err error
	if d.mix, err = readResults(filepath.Join(dir, "mix.jsonl")); err != nil {
		return err
	}
	if d.limited, err = readResults(filepath.Join(dir, "limited.jsonl")); err != nil {
		return err
	}
	// rows calls each with the tab-separated cells of every line of name.
	rows := func(name string, min int, each func([]string) error) error {
		b, err := os.ReadFile(filepath.Join(dir, name))
		for line := range strings.Lines(string(b)) {
			cells := strings.Split(strings.TrimRight(line, "\r\n"), "\t")
			if len(cells) < min {
				return fmt.Errorf("%s: short line %q", name, strings.TrimRight(line, "\r\n"))
			}
			if err := each(cells); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return err
	}
	ms := func(s string) time.Time { n, _ := strconv.ParseInt(s, 10, 64); return time.UnixMilli(n) }
	num := func(c []string, i int) float64 { // -1: not sampled
		if i >= len(c) {
			return -1
		}
		f, err := strconv.ParseFloat(c[i], 64)
		if err != nil {
			return -1
		}
		return f
	}
	if err := rows("events.tsv", 4, func(c []string) error {
		e := event{kind: c[0], name: c[1], start: ms(c[2]), end: ms(c[3]), allowed: map[int]bool{}}
		if len(c) > 4 && c[4] != "-" {
			for s := range strings.SplitSeq(c[4], ",") {
				n, err := strconv.Atoi(s)
				if err != nil {
					return err
				}
				e.allowed[n] = true
			}
		}
		d.events = append(d.events, e)
		return nil
	}); err != nil {
		return err
	}
	if err := rows("samples.tsv", 6, func(c []string) error {
		d.samples = append(d.samples, sample{at: ms(c[0]), edge: c[1], pid: c[2], rssKB: num(c, 3), gor: num(c, 4), fds: num(c, 5), gc: num(c, 6), conns: num(c, 7)})
		return nil
	}); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := rows("keychecks.tsv", 8, func(c []string) error {
		var n [4]int
		for i := range n {
			if n[i], err = strconv.Atoi(c[2+i]); err != nil {
				return err
			}
		}
		d.probes = append(d.probes, probe{change: c[0], edge: c[1], appliedMS: n[0], appliedBound: n[1],
			probeMS: n[2], probeBound: n[3], ok: c[6] == "1", detail: c[7]})
		return nil
	}); err != nil {
		return err
	}
	return rows("checks.tsv", 3, func(c []string) error {
		d.checks = append(d.checks, check{name: c[0], ok: c[1] == "1", detail: c[2]})
		return nil
	})
}

func readResults(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []result
	for dec := json.NewDecoder(bufio.NewReader(f)); ; {
		var r result
		if err := dec.Decode(&r); err == io.EOF {
			return rs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rs = append(rs, r)
	}
}
