package edge_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
)

// BenchmarkAccessLogSlowOutput is bench/README.md's slow-output row, the latency
// half: cached gets over loopback keep-alive, one at a time, with the
// access log (cmd/edge's JSON logger over an observability.LogBuffer) going
// to a fast output (io.Discard) or to a pipe whose reader takes 10 lines a
// second. It reports p50 and p99 of the request latency and the lines the
// LogBuffer dropped: with a slow pipe, p99 stays within the noise of the
// fast output's while the dropped count rises. (Before the LogBuffer each
// line was one write to the output, so a full pipe held every request.)
//
//	go test -run '^$' -bench AccessLogSlowOutput -benchtime 20000x -count 3 ./edge/
func BenchmarkAccessLogSlowOutput(b *testing.B) {
	for _, out := range []string{"fast_output", "slow_pipe_10_lines_per_s"} {
		b.Run(out, func(b *testing.B) {
			var w io.Writer = io.Discard
			if out != "fast_output" {
				pr, pw, err := os.Pipe()
				if err != nil {
					b.Fatal(err)
				}
				stop, done := make(chan struct{}), make(chan struct{})
				go func() { // the slow reader, until stop
					defer close(done)
					br := bufio.NewReader(pr)
					for {
						if _, err := br.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
							return
						}
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond): // the slow reader's own pace
						}
					}
				}()
				b.Cleanup(func() { close(stop); pw.Close(); pr.Close(); <-done })
				w = pw
			}
			buf := observability.NewLogBuffer(w, observability.LogBufferConfig{})
			b.Cleanup(func() {
				// A pipe read at 10 lines a second takes minutes to drain:
				// give up after a moment (the pipe is closed next).
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				_ = buf.Close(ctx)
			})
			env := newBenchEnv(b, time.Hour, observability.NewLogger(buf, "json", slog.LevelInfo, "pms-token-secret"))
			target := "/v1/properties/" + env.activeIDs[len(env.activeIDs)/2]
			warm(b, env.handler, env.request(target, env.liveToken), http.StatusOK)
			srv := httptest.NewServer(env.handler)
			b.Cleanup(srv.Close)
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			req := []byte("GET " + target + " HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() +
				"\r\nUser-Agent: " + benchUA + "\r\nAccept: */*\r\nAuthorization: Bearer " + env.liveToken + "\r\n\r\n")
			br := bufio.NewReaderSize(conn, 16<<10)
			lat := make([]time.Duration, 0, max(b.N, 1))
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				if err := readResponse(br); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(float64(buf.Dropped()), "dropped-lines")
		})
	}
}
