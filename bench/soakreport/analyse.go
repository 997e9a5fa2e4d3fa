package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// segment is a stretch of the run: the warm-up, a fault's window (from
// the fault's start until the fleet is expected to have recovered), or the
// calm between.
type segment struct {
	name, kind       string // kind: warm-up, fault, calm
	start, end       time.Time
	allowed          map[int]bool
	codes            map[int]int // every answer, both attacks; 0: no answer (vegeta's error)
	lat              []time.Duration
	limited200, reqs int
	noRetryAfter     int // 503s without Retry-After
}

func (s *segment) serverErrors() (n int, codes []string) {
	for c, k := range s.codes {
		if c == 0 || c >= 500 {
			n += k
			codes = append(codes, fmt.Sprintf("%d×%d", c, k))
		}
	}
	sort.Strings(codes)
	return n, codes
}

type resource struct {
	edge, pid string
	base, end sample
	rssBase   *sample // nil: no collection under load, RSS not compared
	ok        bool
	notes     []string
}

type analysis struct {
	t0, tEnd time.Time
	segments []*segment
	requests int
	admitted int
	limited  map[int]int
	expected float64
	// calm and inFault are the worst 5-second p99 of the mixed traffic
	// outside the warm-up and every fault window, and in buckets that
	// overlap a fault window (latency.go).
	calm, inFault worst
	resources     []resource
	breaches      breaches
}

func analyse(c config, d *data) *analysis {
	a := &analysis{limited: map[int]int{}}
	var faults []event
	warmEnd := time.Time{}
	for _, e := range d.events {
		switch e.kind {
		case "load":
			a.t0, a.tEnd = e.start, e.end
		case "warmup":
			warmEnd = e.end
		case "fault":
			faults = append(faults, e)
		}
	}
	sort.Slice(faults, func(i, j int) bool { return faults[i].start.Before(faults[j].start) })
	at := a.t0
	add := func(name, kind string, end time.Time, allowed map[int]bool) {
		if !end.After(at) {
			return
		}
		a.segments = append(a.segments, &segment{name: name, kind: kind, start: at, end: end, allowed: allowed, codes: map[int]int{}})
		at = end
	}
	add("warm-up", "warm-up", warmEnd, nil)
	prev := "warm-up"
	for _, f := range faults {
		add("calm after "+prev, "calm", f.start, nil)
		add(f.name, "fault", f.end, f.allowed)
		prev = f.name
	}
	add("calm after "+prev, "calm", a.tEnd, nil)
	find := func(t time.Time) *segment {
		i := sort.Search(len(a.segments), func(i int) bool { return a.segments[i].end.After(t) })
		if i == len(a.segments) {
			i--
		}
		return a.segments[i]
	}
	for _, r := range append(slices.Clip(d.mix), d.limited...) {
		s := find(r.Timestamp)
		s.reqs++
		s.codes[r.Code]++
		if r.Code == 503 && len(r.Headers["Retry-After"]) == 0 {
			s.noRetryAfter++
		}
		if r.Attack == "limited" {
			a.limited[r.Code]++
			if r.Code == 200 {
				s.limited200++
				a.admitted++
			}
		} else {
			s.lat = append(s.lat, r.Latency)
		}
		a.requests++
	}

	for _, s := range a.segments {
		n, codes := s.serverErrors()
		switch {
		case n == 0:
		case s.kind != "fault":
			a.breaches = append(a.breaches, fmt.Sprintf("%s: %d partner 5xx outside a fault window (%s)", s.name, n, strings.Join(codes, ", ")))
		default:
			for c, k := range s.codes {
				if (c == 0 || c >= 500) && !s.allowed[c] {
					a.breaches = append(a.breaches, fmt.Sprintf("%s: %d answers %d, which docs/resilience.md does not promise for this fault", s.name, k, c))
				}
			}
		}
		if s.noRetryAfter > 0 {
			a.breaches = append(a.breaches, fmt.Sprintf("%s: %d answers 503 without Retry-After", s.name, s.noRetryAfter))
		}
	}

	a.worstP99(d.mix)
	for _, s := range a.segments {
		if s.kind != "fault" {
			continue
		}
		if lim := limitedBound(c, s); float64(s.limited200) > lim {
			a.breaches = append(a.breaches, fmt.Sprintf("%s: the limited key admitted %d times (%.2fx its quota), beyond %.0f (%s)",
				s.name, s.limited200, quotaRatio(c, s), lim, limitedPromise(s)))
		}
	}

	a.expected = c.limitRate*float64(c.duration) + c.limitBurst
	if ratio := float64(a.admitted) / a.expected; ratio < admitLow || ratio > admitHigh {
		a.breaches = append(a.breaches, fmt.Sprintf("the limited key: %d admitted, %.3f of rate × seconds + burst (%.0f); allowed %.2f-%.2f",
			a.admitted, ratio, a.expected, admitLow, admitHigh))
	}

	a.resources = resources(d, warmEnd)
	for _, r := range a.resources {
		for _, n := range r.notes {
			a.breaches = append(a.breaches, fmt.Sprintf("%s (pid %s): %s", r.edge, r.pid, n))
		}
	}
	for _, p := range d.probes {
		if !p.ok || p.probeMS > p.probeBound {
			a.breaches = append(a.breaches, fmt.Sprintf("%s on %s: %s after %d ms (bound %d ms)", p.change, p.edge, p.detail, p.probeMS, p.probeBound))
		}
		if p.appliedBound > 0 && (p.appliedMS < 0 || p.appliedMS > p.appliedBound) {
			a.breaches = append(a.breaches, fmt.Sprintf("%s on %s: applied after %d ms by its log (-1: never; bound %d ms)", p.change, p.edge, p.appliedMS, p.appliedBound))
		}
	}
	for _, k := range d.checks {
		if !k.ok {
			a.breaches = append(a.breaches, fmt.Sprintf("%s: %s", k.name, k.detail))
		}
	}
	return a
}

// resources compares each edge process's last sample with its first after
// warm-up (an edge started again during the run: its own warm-up after its
// start). Only growth counts: memory handed back is no leak. RSS is
// compared from the first sample after the process's second collection
// since its first sample: the first under load sets the collector's goal
// (the live heap + the edge's 48 MiB headroom, gcrule.Tune in cmd/edge) and
// the heap grows to it before the second; that growth is no leak either.
// The end is the lowest of the samples of the last endSpan: a leak does not
// go down, a burst of connections from the balancer does.
func resources(d *data, warmEnd time.Time) []resource {
	byPID := map[string][]sample{}
	var order []string
	for _, s := range d.samples {
		if _, ok := byPID[s.pid]; !ok {
			order = append(order, s.pid)
		}
		byPID[s.pid] = append(byPID[s.pid], s)
	}
	var out []resource
	for _, pid := range order {
		ss := byPID[pid]
		from := ss[0].at.Add(edgeWarm)
		if warmEnd.After(from) {
			from = warmEnd
		}
		i := slices.IndexFunc(ss, func(s sample) bool { return !s.at.Before(from) })
		if i < 0 || i == len(ss)-1 {
			continue // too short-lived to compare
		}
		r := resource{edge: ss[0].edge, pid: pid, base: ss[i], end: ss[len(ss)-1], ok: true}
		for _, s := range ss[i+1:] {
			if s.at.Before(r.end.at.Add(-endSpan)) {
				continue
			}
			r.end.rssKB = math.Min(r.end.rssKB, s.rssKB)
			r.end.gor = math.Min(r.end.gor, s.gor)
			r.end.fds = math.Min(r.end.fds, s.fds)
			r.end.conns = math.Min(r.end.conns, s.conns)
		}
		if j := slices.IndexFunc(ss, func(s sample) bool { return s.gc >= ss[0].gc+2 && ss[0].gc >= 0 && !s.at.Before(from) }); j >= 0 && j < len(ss)-1 {
			r.rssBase = &ss[j]
		}
		grow := func(what string, base, end, abs float64, unit string) {
			allow := math.Max(base*growth, abs)
			if base < 0 || end < 0 {
				r.notes = append(r.notes, what+" not sampled")
			} else if end-base > allow {
				r.notes = append(r.notes, fmt.Sprintf("%s grew from %.0f to %.0f %s (allowed %.0f)", what, base, end, unit, allow))
			}
		}
		if r.rssBase != nil {
			grow("RSS", r.rssBase.rssKB, r.end.rssKB, growRSSKB, "KB")
		}
		grow("goroutines", r.base.gor, r.end.gor, growGoroutines, "")
		grow("open fds", r.base.fds, r.end.fds, growFDs, "")
		r.ok = len(r.notes) == 0
		out = append(out, r)
	}
	return out
}

// endSpan is how far back from a process's last sample its end value is
// taken (the lowest in it).
const endSpan = 30 * time.Second

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}
