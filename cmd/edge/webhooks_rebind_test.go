package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// docs/webhooks.md, "No delivery reaches inside": DNS rebinding through
// the built binary. The edge runs in a mount namespace of its own whose
// /etc/resolv.conf names the test's DNS server, and resolves with Go's
// own resolver (GODEBUG=netdns=go), which reads that file. resolv.conf
// names no port, so the server takes port 53 of a loopback address: the
// namespace and the port need root, which CI has.

// rebinding is a name the test's DNS server answers: before, until the
// receiver sees the name's first attempt, then after.
type rebinding struct {
	before, after netip.Addr
	rebound       atomic.Bool  // set by the receiver at the name's first attempt
	afterServed   atomic.Int64 // the answers that carried after
}

// dnsAnswer is the answer to query: an A record (TTL 0) for a name of
// names, no record of another type for it (NOERROR), NXDOMAIN for any
// other name.
func dnsAnswer(names map[string]*rebinding, query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	r, known := names[strings.ToLower(q.Name.String())]
	// Authoritative: an answer with no record is then "no such record",
	// not a lame referral to Go's resolver.
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if known && q.Type == dnsmessage.TypeA {
		a := r.before
		if r.rebound.Load() {
			a = r.after
			r.afterServed.Add(1)
		}
		if err := b.StartAnswers(); err != nil {
			return nil, err
		}
		rr := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}
		if err := b.AResource(rr, dnsmessage.AResource{A: a.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// serveDNS answers names (fully qualified, lower case) over UDP on port 53
// of the first free address from 127.0.0.53 to 127.0.0.62 (systemd-resolved
// may hold the first), and returns that address; it stops when t ends.
func serveDNS(t *testing.T, names map[string]*rebinding) (string, error) {
	t.Helper()
	var conn net.PacketConn
	var err error
	for i := 53; i <= 62; i++ {
		if conn, err = net.ListenPacket("udp4", "127.0.0."+strconv.Itoa(i)+":53"); err == nil {
			break
		}
	}
	if err != nil {
		return "", err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return // closed when t ends
			}
			if answer, err := dnsAnswer(names, buf[:n]); err == nil {
				_, _ = conn.WriteTo(answer, from)
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); <-done })
	return conn.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// listenBeside is a listener on 127.0.0.2 and a counting one on 127.0.0.1,
// on one port: a URL's port reaches either, as its name resolves.
func listenBeside(t *testing.T) (net.Listener, *acceptCounter) {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp4", "127.0.0.2:0")
		if err != nil {
			t.Fatal(err)
		}
		if inside, err := listenCounting(t, "127.0.0.1:"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)); err == nil {
			return ln, inside
		}
		_ = ln.Close() // the port is taken on 127.0.0.1: another
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return nil, nil
}

// unavailable skips t for why, or fails it under CI=true.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI runs as root, where it is)")
	}
	t.Skip(why + "; CI=true makes this a failure")
}

// withResolvConf is the command running the edge binary in a mount
// namespace of its own where /etc/resolv.conf is resolv: unshare(1),
// mount(8) --bind, then exec, so that the process started is the edge's.
// t is skipped (failed under CI=true) when such a namespace cannot be made.
func withResolvConf(t *testing.T, resolv string) *exec.Cmd {
	t.Helper()
	unshare := needProgram(t, "unshare", "util-linux")
	mount := needProgram(t, "mount", "mount")
	sh := needProgram(t, "sh", "dash")
	if out, err := exec.Command(unshare, "--mount", mount, "--bind", resolv, "/etc/resolv.conf").CombinedOutput(); err != nil {
		unavailable(t, "no mount namespace with its own /etc/resolv.conf: "+err.Error()+": "+string(out))
	}
	// unshare makes the namespace's mounts private: the bind stays in it.
	return exec.Command(unshare, "--mount", sh, "-c", `"$0" --bind "$1" /etc/resolv.conf && exec "$2"`, mount, resolv, buildEdge(t))
}

// Two names answer the address of an allowed receiver (127.0.0.2,
// EDGE_WEBHOOK_ALLOW_CIDRS=127.0.0.2/32) until their first attempt arrives,
// and an inside address from then on: 127.0.0.1 (a listener on the
// receiver's port) and 169.254.169.254 (cloud metadata). The first
// attempts reach the receiver, which answers 500 and closes the
// connection; the retries 5 s later dial anew, resolve the inside
// addresses and count as address_refused; the listener on 127.0.0.1
// accepts nothing.
func testRebinding(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		unavailable(t, "DNS rebinding through the binary needs root (a mount namespace, port 53)")
	}
	rcvLn, inside := listenBeside(t)
	port := strconv.Itoa(rcvLn.Addr().(*net.TCPAddr).Port)
	allowed := netip.MustParseAddr("127.0.0.2")
	names := map[string]*rebinding{
		"hooks.rebind.test.":    {before: allowed, after: netip.MustParseAddr("127.0.0.1")},
		"metadata.rebind.test.": {before: allowed, after: netip.MustParseAddr("169.254.169.254")},
	}
	dns, err := serveDNS(t, names)
	if err != nil {
		unavailable(t, "no loopback address with port 53 free for the test's DNS server: "+err.Error())
	}
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+dns+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := withResolvConf(t, resolv)

	var mu sync.Mutex
	got := map[string]int{} // requests by name
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.Host)
		if n, ok := names[host+"."]; ok {
			n.rebound.Store(true) // before answering: the retry resolves again after it
		}
		mu.Lock()
		got[host]++
		mu.Unlock()
		w.Header().Set("Connection", "close") // the retry dials anew
		w.WriteHeader(http.StatusInternalServerError)
	}))
	_ = rcv.Listener.Close()
	rcv.Listener = rcvLn
	rcv.Start()
	t.Cleanup(rcv.Close)

	k := hookKey(t)
	e := startHookEdgeCmd(t, cmd, churningPMS(t), k,
		"EDGE_WEBHOOK_ALLOW_CIDRS=127.0.0.2/32", "EDGE_WEBHOOK_ALLOW_HTTP=true", "GODEBUG=netdns=go")
	p := partner{e.base, k.live}
	for name := range names {
		p.createHook(t, "http://"+strings.TrimSuffix(name, ".")+":"+port+"/hooks")
	}
	want := float64(len(names)) // per outcome: the first attempts, then the retries
	testkit.Eventually(t, "every endpoint's first attempt and its retry made", func() bool {
		return total(attempts(t, e.admin)) >= 2*want
	})
	for o, n := range attempts(t, e.admin) {
		if (o == webhooks.FailedStatus || o == webhooks.FailedRefused) && n != want || o != webhooks.FailedStatus && o != webhooks.FailedRefused && n != 0 {
			t.Errorf("%s attempts: %v; want %v http_status (the first attempts), %v address_refused (the retries) and no other", o, n, want, want)
		}
	}
	if n := inside.accepted.Load(); n != 0 {
		t.Errorf("the listener on 127.0.0.1 accepted %d connections", n)
	}
	for name, r := range names {
		if r.afterServed.Load() == 0 {
			t.Errorf("%s was never resolved to %s after its first attempt", name, r.after)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(names) || got["hooks.rebind.test"] != 1 || got["metadata.rebind.test"] != 1 {
		t.Errorf("the receiver got %v; want one attempt of each name", got)
	}
}
