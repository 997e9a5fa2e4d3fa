package main

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
)

// picture draws three panels over the run's seconds: answers per second,
// partner 5xx per second, and the mixed traffic's p99 over 5 s buckets,
// with the fault windows shaded and named in plain words, titled axes with
// five labelled ticks each, and a legend.
func picture(c config, d *data, a *analysis) string {
	secs := max(int(math.Ceil(a.tEnd.Sub(a.t0).Seconds())), 1)
	rps := make([]float64, secs)
	errs := make([]float64, secs)
	const bucket = 5
	lat := make([][]time.Duration, (secs+bucket-1)/bucket) // the last may be short
	idx := func(t time.Time) int { return min(max(int(t.Sub(a.t0).Seconds()), 0), secs-1) }
	for k, rs := range [][]result{d.mix, d.limited} {
		for _, r := range rs {
			i := idx(r.Timestamp)
			rps[i]++
			if r.Code == 0 || r.Code >= 500 {
				errs[i]++
			}
			if k == 0 { // the mixed traffic's latency only
				lat[i/bucket] = append(lat[i/bucket], r.Latency)
			}
		}
	}
	p99 := make([]float64, len(lat))
	for i, l := range lat {
		p99[i] = float64(percentile(l, 0.99)) / float64(time.Millisecond)
	}

	const w, left, right, panelH, gap, top = 1000.0, 70.0, 20.0, 130.0, 56.0, 64.0
	plotW := w - left - right
	h := top + 3*(panelH+gap) + 10
	x := func(s float64) float64 { return left + plotW*s/float64(secs) }
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, h)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%.0f" y="16" font-size="13">bench/soak %s: %d s of steady partner traffic through three edges, %s run</text>`+"\n", left, a.t0.UTC().Format("2006-01-02 15:04Z"), c.duration, c.mode)
	panels := []struct {
		title, legend, axis string // the panel's title, its line in the legend, its y axis's title (with the unit)
		v                   []float64
		step                float64 // seconds per value
		color               string
	}{
		{"answers per second, all partner traffic (the mixed traffic and the limited key)", "answers per second, all partner traffic",
			"answers per second", rps, 1, "#1f77b4"},
		{"partner 5xx per second (requests that got no answer count as 5xx)", "partner 5xx per second",
			"5xx per second", errs, 1, "#d62728"},
		{fmt.Sprintf("p99 latency of the mixed traffic per %d s, ms", bucket), fmt.Sprintf("p99 latency per %d s, ms", bucket),
			"p99 latency, ms", p99, bucket, "#2ca02c"},
	}
	// The legend: what the shaded bands and each line are.
	p(`<rect x="%.0f" y="26" width="14" height="10" fill="#f4a582" fill-opacity="0.35" stroke="#b2182b" stroke-width="0.5"/>`+"\n", left)
	p(`<text x="%.0f" y="35">fault being injected, and the time the fleet is given to recover (each band named above the first panel)</text>`+"\n", left+20)
	lx := left
	for _, pn := range panels {
		p(`<line x1="%.0f" x2="%.0f" y1="46" y2="46" stroke="%s" stroke-width="2"/>`+"\n", lx, lx+14, pn.color)
		p(`<text x="%.0f" y="50">%s</text>`+"\n", lx+20, html.EscapeString(pn.legend))
		lx += 20 + 6.2*float64(len(pn.legend)) + 24 // about 6 px a character at 11 px
	}
	tick := 60
	if secs <= 120 {
		tick = 10
	}
	for k, pn := range panels {
		y0 := top + float64(k)*(panelH+gap) + 14
		maxV := 0.0
		for _, v := range pn.v {
			maxV = math.Max(maxV, v)
		}
		maxV = axisMax(maxV)
		for _, s := range a.segments {
			if s.kind != "fault" {
				continue
			}
			x0, x1 := x(s.start.Sub(a.t0).Seconds()), x(s.end.Sub(a.t0).Seconds())
			p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="#f4a582" fill-opacity="0.35"/>`+"\n", x0, y0, math.Max(x1-x0, 1), panelH)
			if k == 0 {
				p(`<text x="%.1f" y="%.1f" font-size="9" fill="#b2182b">%s</text>`+"\n", x0+1, y0-3, html.EscapeString(plainFault(s.name)))
			}
		}
		p(`<rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", left, y0, plotW, panelH)
		p(`<text x="%.0f" y="%.1f">%s</text>`+"\n", left+4, y0+12, html.EscapeString(pn.title))
		for s := 0; s <= secs; s += tick {
			p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x(float64(s)), x(float64(s)), y0, y0+panelH)
			p(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%d</text>`+"\n", x(float64(s)), y0+panelH+11, s)
		}
		p(`<text x="%.0f" y="%.1f" text-anchor="middle" font-size="10">seconds since the load began</text>`+"\n", left+plotW/2, y0+panelH+24)
		// Five labelled ticks on the y axis, with grid lines.
		for i := 0; i <= 4; i++ {
			v := maxV * float64(i) / 4
			y := y0 + panelH - panelH*float64(i)/4
			if i > 0 && i < 4 {
				p(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", left, left+plotW, y, y)
			}
			p(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#888"/>`+"\n", left-3, left, y, y)
			p(`<text x="%.0f" y="%.1f" text-anchor="end" font-size="9">%s</text>`+"\n", left-5, y+3, strconv.FormatFloat(v, 'f', -1, 64))
		}
		yc := y0 + panelH/2
		p(`<text x="14" y="%.1f" text-anchor="middle" font-size="10" transform="rotate(-90 14 %.1f)">%s</text>`+"\n", yc, yc, html.EscapeString(pn.axis))
		var pts []string
		for i, v := range pn.v {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(math.Min((float64(i)+0.5)*pn.step, float64(secs))), y0+panelH-panelH*v/maxV))
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="1.2" points="%s"/>`+"\n", pn.color, strings.Join(pts, " "))
	}
	p("</svg>\n")
	return b.String()
}

// axisMax is the top of a y axis showing values up to v: four times a
// round step (1, 2, 2.5 or 5 times a power of ten, at least 1), so that
// the ticks at 0, 25, 50, 75 and 100 % of it read as round numbers.
func axisMax(v float64) float64 {
	step := math.Max(v/4, 1)
	e := math.Pow(10, math.Floor(math.Log10(step)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= step {
			return 4 * m * e
		}
	}
	return 40 * e
}

// plainFault names a fault in plain words for the picture.
func plainFault(name string) string {
	if w, ok := map[string]string{
		"pms-restart":    "PMS restarted",
		"pms-500":        "PMS answers 500",
		"pms-slow":       "PMS 2 s late",
		"redis-failover": "Redis primary killed",
		"edge-kill":      "an edge killed",
		"keys":           "keys changed",
		"cert-rotate":    "certificate renewed",
		"keyfile-broken": "key file broken",
	}[name]; ok {
		return w
	}
	return name
}
