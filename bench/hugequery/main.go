// Command hugequery is the huge-query load of bench/README.md ("Huge queries against health"): bursts
// of requests whose query is 64 KB of unknown parameter names, sent at once
// on open keep-alive connections, while a second process (this program
// again, with -probe) asks /v1/health every 10 ms and times each answer.
// The prober is a process of its own so that its timings do not queue
// behind the load's goroutines in one Go scheduler; the edge, the load and
// the prober share the machine as an edge and its attackers would.
//
//	go run ./bench/hugequery -url http://127.0.0.1:8080 -key svc_live_...
//
// It prints one line per burst and a summary, and exits 1 when a health
// answer took longer than -max (100 ms) or was not 200, or when a load
// answer was not 400 or was larger than 8 KB. See bench/README.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hugequery:", err)
		os.Exit(1)
	}
}

type config struct {
	base, key                    string
	conns, size, bursts, maxBody int
	gap, max                     time.Duration
	probeOnly                    bool
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	var c config
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.StringVar(&c.base, "url", "http://127.0.0.1:8080", "the edge's base URL (plain HTTP)")
	fs.StringVar(&c.key, "key", getenv("HUGEQUERY_KEY"), "a live API key (default $HUGEQUERY_KEY)")
	fs.IntVar(&c.conns, "conns", 300, "requests per burst, each on its own connection")
	fs.IntVar(&c.size, "size", 64<<10, "bytes of query per request")
	fs.IntVar(&c.bursts, "bursts", 10, "bursts to send")
	fs.DurationVar(&c.gap, "gap", 300*time.Millisecond, "pause between bursts")
	fs.DurationVar(&c.max, "max", 100*time.Millisecond, "slowest health answer allowed")
	fs.IntVar(&c.maxBody, "max-body", 8<<10, "largest load answer allowed, in bytes")
	fs.BoolVar(&c.probeOnly, "probe", false, "internal: be the health prober, until stdin closes")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if c.probeOnly {
		return probe(ctx, c.base, stdin, stdout)
	}
	if c.key == "" {
		return errors.New("no key: give -key or set HUGEQUERY_KEY")
	}
	return load(ctx, c, stdout)
}

// probe asks base/v1/health every 10 ms, on one keep-alive connection,
// and writes "start-unix-nanos duration-nanos status" for each answer
// until stdin reaches its end.
func probe(ctx context.Context, base string, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	go func() { _, _ = io.Copy(io.Discard, stdin); cancel() }()
	client := &http.Client{Timeout: 10 * time.Second}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for {
		start := time.Now()
		status := 0
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/health", nil)
		if res, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			status = res.StatusCode
		} else if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(w, "%d %d %d\n", start.UnixNano(), time.Since(start).Nanoseconds(), status)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

type sample struct {
	start  time.Time
	took   time.Duration
	status int
}

func load(ctx context.Context, c config, stdout io.Writer) error {
	u, err := url.Parse(c.base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-url %q: want http://host:port", c.base)
	}
	raw := []byte("GET /v1/properties?" + unknownQuery(c.size) + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nAuthorization: Bearer " + c.key + "\r\nUser-Agent: hugequery/1\r\n\r\n")

	type conn struct {
		net.Conn
		br *bufio.Reader
	}
	conns := make([]conn, c.conns)
	for i := range conns {
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		defer nc.Close()
		conns[i] = conn{nc, bufio.NewReaderSize(nc, 16<<10)}
	}

	stopProbe, err := startProber(c.base)
	if err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond) // the prober's connection is open before the first burst

	type window struct{ start, end time.Time }
	var windows []window
	var failures []string
	maxBody := 0
	for b := 0; b < c.bursts && ctx.Err() == nil; b++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		release := make(chan struct{})
		for _, cn := range conns {
			wg.Go(func() {
				<-release
				status, n, err := roundTrip(cn.Conn, cn.br, raw)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case status != http.StatusBadRequest:
					failures = append(failures, fmt.Sprintf("load answer %d, want 400", status))
				}
				maxBody = max(maxBody, n)
			})
		}
		start := time.Now()
		close(release)
		wg.Wait()
		windows = append(windows, window{start, time.Now()})
		time.Sleep(c.gap)
	}
	all := stopProbe()

	for _, s := range all {
		if s.status != http.StatusOK {
			failures = append(failures, fmt.Sprintf("health answer %d", s.status))
		}
	}
	var during []time.Duration
	for i, w := range windows {
		var in []time.Duration
		for _, s := range all {
			// A probe belongs to the burst it overlaps.
			if s.start.Before(w.end) && s.start.Add(s.took).After(w.start) {
				in = append(in, s.took)
			}
		}
		during = append(during, in...)
		m := slices.Max(append(in, 0))
		fmt.Fprintf(stdout, "burst %2d: %d requests in %6.1f ms; %2d health answers during it, slowest %6.1f ms\n",
			i+1, c.conns, ms(w.end.Sub(w.start)), len(in), ms(m))
	}
	if len(during) == 0 {
		return errors.New("no health answer overlapped a burst")
	}
	slices.Sort(during)
	worst := during[len(during)-1]
	fmt.Fprintf(stdout, "health during bursts: %d answers, p50 %.1f ms, p99 %.1f ms, max %.1f ms (limit %.0f ms); largest load answer %d bytes\n",
		len(during), ms(during[len(during)/2]), ms(during[len(during)*99/100]), ms(worst), ms(c.max), maxBody)
	if worst > c.max {
		failures = append(failures, fmt.Sprintf("health took %.1f ms, over %.0f ms", ms(worst), ms(c.max)))
	}
	if maxBody > c.maxBody {
		failures = append(failures, fmt.Sprintf("a load answer was %d bytes, over %d", maxBody, c.maxBody))
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d failures, the first: %s", len(failures), failures[0])
	}
	return nil
}

// roundTrip writes one request and reads its answer.
func roundTrip(c net.Conn, br *bufio.Reader, raw []byte) (status, bodyLen int, err error) {
	if _, err := c.Write(raw); err != nil {
		return 0, 0, err
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, int(n), err
}

// startProber runs this program again with -probe; stop ends it and
// returns its samples.
func startProber(base string) (stop func() []sample, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command(exe, "-probe", "-url", base)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() (samples []sample) {
		_ = in.Close()
		_ = cmd.Wait()
		for line := range strings.Lines(out.String()) {
			var start, took int64
			var status int
			if _, err := fmt.Sscan(line, &start, &took, &status); err == nil {
				samples = append(samples, sample{time.Unix(0, start), time.Duration(took), status})
			}
		}
		return samples
	}, nil
}

// unknownQuery is size bytes of distinct unknown names: unknown00000=1&...
func unknownQuery(size int) string {
	var b strings.Builder
	for n := 0; b.Len() < size; n++ {
		if n > 0 {
			b.WriteByte('&')
		}
		fmt.Fprintf(&b, "unknown%05d=1", n)
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
