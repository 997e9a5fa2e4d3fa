package main

import "time"

// calmBucket is the length of the buckets whose p99 the report's worst
// figures are the largest of: a window's p99 over a minute of calm hides
// a 5-second spike (a 320 ms p99 in a calm window once read as "2.8-110
// ms per window").
const calmBucket = 5 * time.Second

// worst is the largest p99 of the mixed traffic over the 5-s buckets of a
// kind (calm, or overlapping a fault window).
type worst struct {
	p99     time.Duration
	at      float64 // the bucket's start, in seconds from the load's
	in      string  // the window it lies in (or overlaps, for a fault)
	buckets int     // how many buckets of the kind there were; 0: none
}

func (w *worst) add(p time.Duration, at float64, in string) {
	w.buckets++
	if w.buckets == 1 || p > w.p99 {
		w.p99, w.at, w.in = p, at, in
	}
}

// worstP99 sorts the 5-s buckets of the mixed traffic (from the load's
// start; a last bucket cut short by the load's end is left out) into those
// wholly in calm segments and those overlapping a fault window, and keeps
// the worst p99 of each. Buckets of the warm-up are neither.
func (a *analysis) worstP99(mix []result) {
	n := int(a.tEnd.Sub(a.t0) / calmBucket)
	if n <= 0 {
		return
	}
	lat := make([][]time.Duration, n)
	for _, r := range mix {
		if i := int(r.Timestamp.Sub(a.t0) / calmBucket); r.Timestamp.Compare(a.t0) >= 0 && i < n {
			lat[i] = append(lat[i], r.Latency)
		}
	}
	for i, l := range lat {
		if len(l) == 0 {
			continue
		}
		from := a.t0.Add(time.Duration(i) * calmBucket)
		to := from.Add(calmBucket)
		at := from.Sub(a.t0).Seconds()
		var fault, calm string
		other := false
		for _, s := range a.segments {
			if !s.start.Before(to) || !s.end.After(from) {
				continue
			}
			switch s.kind {
			case "fault":
				if fault == "" {
					fault = s.name
				}
			case "calm":
				if calm == "" {
					calm = s.name
				}
			default:
				other = true
			}
		}
		switch {
		case fault != "":
			a.inFault.add(percentile(l, 0.99), at, fault)
		case calm != "" && !other:
			a.calm.add(percentile(l, 0.99), at, calm)
		}
	}
}
