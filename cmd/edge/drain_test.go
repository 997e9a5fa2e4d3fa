package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// slowPMS is the simulator answering every call after latency, counting
// the calls that arrived.
func slowPMS(t *testing.T, latency time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	sim := pmsim.New(pmsim.Config{Seed: 5, Token: "pms-secret-token"})
	sim.SetFaults(pmsim.Faults{Latency: latency})
	var arrived atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &arrived
}

// edgeBinary is ./cmd/edge built once for every test of the package that
// runs the real program (a build and link take seconds each; TestMain
// removes it).
var edgeBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// buildEdge returns the path of the edge binary, built on first use.
func buildEdge(t *testing.T) string {
	t.Helper()
	edgeBinary.once.Do(func() {
		edgeBinary.dir, edgeBinary.err = os.MkdirTemp("", "edge-test-bin-")
		if edgeBinary.err != nil {
			return
		}
		bin := filepath.Join(edgeBinary.dir, "edge")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			edgeBinary.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		edgeBinary.path = bin
	})
	if edgeBinary.err != nil {
		t.Fatal(edgeBinary.err)
	}
	return edgeBinary.path
}

// waitingParallel is how many tests of this package run at once unless
// -parallel says otherwise. Its process-level tests spend their time waiting
// on child processes, Redis failovers and slow fake PMSes, not on the CPU,
// so go test's default (GOMAXPROCS, 2 on a small machine) would leave them
// queued behind each other.
const waitingParallel = 8

// TestMain raises -parallel to waitingParallel when it was not given, and
// removes the binary buildEdge made.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(max(waitingParallel, runtime.GOMAXPROCS(0)))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if edgeBinary.dir != "" {
		_ = os.RemoveAll(edgeBinary.dir)
	}
	os.Exit(code)
}

// docs/contract.md section 10: a real edge process with 50 requests in flight
// against a PMS answering in 2 s gets SIGTERM. Health answers 503 during
// the drain, all 50 requests are answered 200, and the process exits 0.
func TestSIGTERMDrainsInFlight(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	const inFlight = 50
	pms, arrived := slowPMS(t, 2*time.Second)
	keysFile, token := keystest.Live(t, "aurora")

	bin := buildEdge(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"EDGE_ADDR=127.0.0.1:0",
		"EDGE_ADMIN_ADDR=", // empty: no admin listener (operations.md)
		"EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + keysFile,
		"PMS_BASE_URL=" + pms.URL, "EDGE_DOCS_URL=" + testDocsURL, "PMS_TOKEN=pms-secret-token",
		"EDGE_CACHE_TTL=0",    // every request waits on the slow PMS
		"EDGE_DRAIN_DELAY=1s", // health 503 while still serving
	}
	stderr := &testkit.LogBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	gone := make(chan struct{}) // closed when the process has exited
	go func() {
		err := cmd.Wait()
		close(gone)
		exited <- err
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	addr := waitListening(t, &started{stderr: stderr})
	base := "http://" + addr + "/v1/"
	waitHealthy(t, base)
	if strings.Contains(stderr.String(), "admin listening") {
		t.Errorf("EDGE_ADMIN_ADDR= (empty) still started the admin listener")
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
	var written sync.WaitGroup
	written.Add(inFlight)
	codes := make(chan int, inFlight)
	for range inFlight {
		go func() {
			wrote := sync.OnceFunc(written.Done)
			defer wrote() // a request that failed early counts as written
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", base+"properties", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("User-Agent", "drain-test/1.0")
			res, err := client.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			codes <- res.StatusCode
		}()
	}
	written.Wait()
	testkit.Eventually(t, "a request reached the PMS", func() bool { return arrived.Load() > 0 })
	waitHealthy(t, base) // one more round trip: the 50 connections are accepted

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	health := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	// Poll until health answers 503 or the process has exited (the outside
	// events), bounded generously: the edge's 1 s drain delay is its own
	// timer, so no fixed window of the wall clock is assumed to match it.
	saw503 := false
	bound := time.After(testkit.EventuallyTimeout)
poll:
	for !saw503 {
		select {
		case <-gone:
			break poll
		case <-bound:
			break poll
		default:
		}
		if res, err := health.Get(base + "health"); err == nil {
			saw503 = res.StatusCode == 503
			res.Body.Close()
		}
	}
	if !saw503 {
		t.Errorf("health never answered 503 during the drain")
	}

	ok := 0
	for range inFlight {
		if code := <-codes; code == 200 {
			ok++
		} else {
			t.Errorf("an in-flight request answered %d", code)
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(testkit.EventuallyTimeout):
		t.Fatal("the edge did not exit after SIGTERM")
	}
	if ok != inFlight || !strings.Contains(stderr.String(), "shutdown complete") {
		t.Errorf("%d of %d answered 200; stderr:\n%s", ok, inFlight, stderr.String())
	}
}

// docs/contract.md section 10: with the default deadlines a PMS that takes 3 s
// for every call is served 200, both the list and a property.
func TestDefaultsServeASlowPMS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on a 3 s PMS")
	}
	pms, arrived := slowPMS(t, 3*time.Second)
	keysFile, token := keystest.Live(t, "aurora")
	for _, ttl := range []string{"", "0"} { // cached, then every read from the PMS
		env := map[string]string{
			"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "", "EDGE_BRAND": "aurora",
			"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": pms.URL, "EDGE_DOCS_URL": testDocsURL, "PMS_TOKEN": "pms-secret-token",
		}
		if ttl != "" {
			env["EDGE_CACHE_TTL"] = ttl
		}
		before := arrived.Load() // the cached edge's first walk starts at start-up
		s := start(t, env)
		base := "http://" + waitListening(t, s) + "/v1/"
		waitHealthy(t, base)
		// Cached, the first walk (3 s) runs at start-up: a request waits
		// for it 2 s at most, then gets 503 with a Retry-After
		// (docs/contract.md section 24); asked again, 200.
		var page struct {
			Data []struct{ ID string } `json:"data"`
		}
		testkit.Eventually(t, "a list answered 200", func() bool {
			res, body := getWithKey(t, base+"properties?perPage=1", token)
			if res.StatusCode == 503 && ttl == "" && res.Header.Get("Retry-After") != "" {
				return false
			}
			if err := json.Unmarshal(body, &page); res.StatusCode != 200 || err != nil || len(page.Data) != 1 {
				t.Fatalf("TTL %q: list %d %s", ttl, res.StatusCode, body)
			}
			return true
		})
		if res, body := getWithKey(t, base+"properties/"+page.Data[0].ID, token); res.StatusCode != 200 {
			t.Errorf("TTL %q: property %d %s", ttl, res.StatusCode, body)
		}
		if arrived.Load() == before {
			t.Errorf("TTL %q: the PMS was never called", ttl)
		}
	}
}

func getWithKey(t *testing.T, url, key string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("User-Agent", "e2e/1.0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return res, body
}
