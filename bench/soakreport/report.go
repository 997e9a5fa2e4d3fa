package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func codeList(m map[int]int) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		name := fmt.Sprint(c)
		if c == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, m[c]))
	}
	return strings.Join(parts, ", ")
}

func report(c config, d *data, a *analysis) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	verdict := "**passed**: every threshold held"
	if len(a.breaches) > 0 {
		verdict = fmt.Sprintf("**failed**: %d thresholds broken (listed at the end)", len(a.breaches))
	}
	p("# bench/soak %s (%s run)\n\n", a.t0.UTC().Format("2006-01-02 15:04Z"), c.mode)
	p("Commit %s. %d s of constant load through nginx to three edges: %.0f mixed requests/s (lists with paging, gets, unknown ids, bad keys) "+
		"and one key limited to %.0f/s (burst %.0f) driven at %.0f/s; `EDGE_CACHE_TTL=%s`. %d requests in all. Machine: %s.\n\n",
		c.commit, c.duration, c.rate, c.limitRate, c.limitBurst, 2*c.limitRate, c.ttl, a.requests, c.machine)
	if c.pms != "" {
		p("PMS (the simulator): %s.\n\n", c.pms)
	}
	p("Verdict: %s.\n\n", verdict)
	if c.svg != "" {
		p("![answers per second, partner 5xx per second and the p99 latency of each 5 s over the run, the fault windows shaded](%s)\n\n", filepath.Base(c.svg))
	}

	p("## The worst 5 seconds of latency\n\n")
	p("The p99 of the mixed traffic over each 5 s from the load's start (the picture's third panel): the worst outside every fault window " +
		"and the warm-up, beside the worst of the 5 s that overlap a fault window. A window's own p99 (the table below) averages a spike away.\n\n")
	p("| where | worst 5-second p99 ms | in the 5 s from s | window | 5-second buckets |\n|---|---|---|---|---|\n")
	for _, w := range []struct {
		name string
		w    worst
	}{{"outside faults", a.calm}, {"in fault windows", a.inFault}} {
		if w.w.buckets == 0 {
			p("| %s | - | - | - | 0 |\n", w.name)
			continue
		}
		p("| %s | **%s** | %.0f | %s | %d |\n", w.name, ms(w.w.p99), w.w.at, w.w.in, w.w.buckets)
	}
	p("\n")

	p("## Windows\n\n")
	p("A fault's window runs from its start until the fleet is expected to have recovered; the calm follows. " +
		"5xx counts every answer of 500 or more and every request vegeta got no answer to; " +
		"\"allowed\" is what docs/resilience.md promises for the fault (none: no 5xx at all). " +
		"Latency is the mixed traffic's (every answer), measured by vegeta at the balancer.\n\n")
	p("| window | from s | length s | requests | 5xx | allowed 5xx | p50 ms | p99 ms | limited key 200 (rate × s) | answers |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range a.segments {
		n, codes := s.serverErrors()
		five := fmt.Sprint(n)
		if n > 0 {
			five += " (" + strings.Join(codes, ", ") + ")"
		}
		al := "none"
		if s.kind != "fault" {
			al = "none (outside faults)"
		} else if len(s.allowed) > 0 {
			al = strings.ReplaceAll(strings.Trim(fmt.Sprint(slices.Sorted(maps.Keys(s.allowed))), "[]"), " ", ", ")
		}
		length := s.end.Sub(s.start).Seconds()
		p("| %s | %.0f | %.1f | %d | %s | %s | %s | %s | %d (%.0f) | %s |\n", s.name, s.start.Sub(a.t0).Seconds(), length, s.reqs,
			five, al, ms(percentile(s.lat, 0.5)), ms(percentile(s.lat, 0.99)), s.limited200, c.limitRate*length, codeList(s.codes))
	}

	p("\n## The limited key in each fault window\n\n")
	p("The key limited to %.0f/s (burst %.0f) is offered %.0f/s throughout. What the docs promise: the %d edges share one quota, at most "+
		"burst + rate x seconds plus what the edges hold of their leases when a window starts (docs/scaling.md, \"The accuracy bound\"); "+
		"while Redis is away (its failover) each edge limits the key by itself, so the fleet admits up to %d times the quota until the edges "+
		"share again on the new primary (docs/resilience.md, \"Quotas while Redis fails over\"). A window past its bound breaks a threshold. "+
		"Past the shared bound in a window whose fault is not Redis's, the edges fell back to their in-process limiters all the same: "+
		"a Redis call past its 100 ms deadline, three in a row, opens an edge's breaker (its log says `redis circuit breaker opened`), "+
		"as on a machine too busy to answer in time.\n\n",
		c.limitRate, c.limitBurst, 2*c.limitRate, fleetSize, fleetSize)
	p("| fault window | length s | admitted (200) | admitted per s | quota per s | admitted / quota | bound (admitted) | the promise |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range a.segments {
		if s.kind != "fault" {
			continue
		}
		length := s.end.Sub(s.start).Seconds()
		perSec := "-"
		if length > 0 {
			perSec = fmt.Sprintf("%.1f", float64(s.limited200)/length)
		}
		lim := limitedBound(c, s)
		bound := fmt.Sprintf("%.0f", lim)
		if float64(s.limited200) > lim {
			bound += " **exceeded**"
		}
		p("| %s | %.1f | %d | %s | %.0f | **%.2fx** | %s | %s |\n", s.name, length, s.limited200, perSec, c.limitRate, quotaRatio(c, s), bound, limitedPromise(s))
	}

	p("\n## The limited key across the fleet\n\n")
	p("%d admitted (200) against rate × seconds + burst = %.0f × %d + %.0f = %.0f: **%.3f** (bound %.2f-%.2f). All its answers: %s.\n",
		a.admitted, c.limitRate, c.duration, c.limitBurst, a.expected, float64(a.admitted)/a.expected, admitLow, admitHigh, codeList(a.limited))

	p("\n## Each edge's resources\n\n")
	p("After warm-up (an edge started again: %s after its start) and at the end, under load. A threshold is growth beyond %.0f%% "+
		"or %.0f MB, %.0f goroutines, %.0f fds, whichever is larger; a fall is no breach. The end is the lowest of the samples of the last %s (a leak does not go down; "+
		"a burst of connections from the balancer does); connections are the established TCP connections to the edge's port. RSS is taken from the first sample after the "+
		"process's second garbage collection under load (until then the heap is still growing to the collector's goal, the live heap "+
		"plus the edge's 48 MiB headroom: at this rate that takes 1-2 minutes); in a run too short for it, RSS is not compared.\n\n", edgeWarm, growth*100, growRSSKB/1024, growGoroutines, growFDs, endSpan)
	p("| edge | pid | RSS MB after warm-up → after the second collection → end | goroutines | open fds | connections | collections | within |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range a.resources {
		ok := "yes"
		if !r.ok {
			ok = "**no**: " + strings.Join(r.notes, "; ")
		}
		first := "none (not compared)"
		if r.rssBase != nil {
			first = fmt.Sprintf("%.1f (at %.0f s)", r.rssBase.rssKB/1024, r.rssBase.at.Sub(a.t0).Seconds())
		}
		p("| %s | %s | %.1f → %s → %.1f | %.0f → %.0f | %.0f → %.0f | %.0f → %.0f | %.0f → %.0f | %s |\n", r.edge, r.pid, r.base.rssKB/1024, first, r.end.rssKB/1024,
			r.base.gor, r.end.gor, r.base.fds, r.end.fds, r.base.conns, r.end.conns, r.base.gc, r.end.gc, ok)
	}

	if len(d.probes) > 0 {
		p("\n## Changes taken by every edge\n\n")
		p("From the change (the command or rename that made it): when the edge's own log said it applied it (`keys reloaded`, " +
			"`TLS certificate reloaded`; \"-\" where no file changed), and when a probe of that edge, made directly and not " +
			"through the balancer, first saw it (the probes share the loaded machine, so they lag).\n\n")
		p("| change | edge | applied after ms (bound) | seen by a probe after ms (bound) | what the probe saw |\n|---|---|---|---|---|\n")
		for _, pr := range d.probes {
			applied := "-"
			if pr.appliedBound > 0 {
				applied = fmt.Sprintf("%d (%d)", pr.appliedMS, pr.appliedBound)
				if pr.appliedMS < 0 || pr.appliedMS > pr.appliedBound {
					applied += " **not in time**"
				}
			}
			seen := fmt.Sprintf("%d (%d)", pr.probeMS, pr.probeBound)
			if !pr.ok || pr.probeMS > pr.probeBound {
				seen += " **not in time**"
			}
			p("| %s | %s | %s | %s | %s |\n", pr.change, pr.edge, applied, seen, pr.detail)
		}
	}
	if len(d.checks) > 0 {
		p("\n## Checks\n\n")
		for _, k := range d.checks {
			mark := "held"
			if !k.ok {
				mark = "**broken**"
			}
			p("- %s: %s (%s)\n", k.name, mark, k.detail)
		}
	}
	if len(a.breaches) > 0 {
		p("\n## Thresholds broken\n\n")
		for _, s := range a.breaches {
			p("- %s\n", s)
		}
	}
	return b.String()
}
