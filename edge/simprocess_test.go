package edge_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// simChildEnv marks this test binary, started again by startSimProcess, as
// the simulator's process: TestMain serves instead of testing.
const simChildEnv = "PARTNER_EDGE_BENCH_SIM_CHILD"

// startSimProcess runs the benchmark's simulator (the same pmsim.Config as
// newBenchEnv's) in a process of its own, this test binary started again,
// and returns its base URL. A miss benchmark counts every allocation of
// its process (testing's allocs/op): with the simulator's HTTP server in
// the same process, about 26 of each miss's allocations were the PMS's,
// not the edge's. The child ends when its stdin closes: at the test's
// cleanup, or when this process dies.
func startSimProcess(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), simChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start the simulator's process: %v", err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			tb.Errorf("simulator process: %v", err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		tb.Fatalf("simulator process said %q (%v), want its URL", line, err)
	}
	return strings.TrimSpace(line)
}

// serveSimChild is the child's side of startSimProcess: it serves the
// simulator on a loopback port chosen by the kernel, writes the URL, and
// serves until stdin closes.
func serveSimChild() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Stderr.WriteString("simulator child: " + err.Error() + "\n")
		return 1
	}
	srv := &http.Server{Handler: pmsim.New(benchSimConfig)}
	go srv.Serve(ln) //nolint:errcheck // ends with Close below
	os.Stdout.WriteString("http://" + ln.Addr().String() + "\n")
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // any end of stdin ends the child
	srv.Close()
	return 0
}
