package webhooks_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// countingListener counts the connections accepted: a refused address
// must never get one.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// receiver is an HTTP server on addr ("127.0.0.1:0") answering 204,
// counting the connections it accepts.
func receiver(t *testing.T, addr string) (*httptest.Server, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	cl := &countingListener{Listener: ln}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cl
}

func post(c *http.Client, url string) error {
	req, err := http.NewRequest(http.MethodPost, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	return nil
}

// TestClientRefusesWithoutConnecting: an address of each refused range,
// spelled as a URL's host, is refused by the dialer's Control, before any
// connection: the loopback receiver (which the refused spellings of
// loopback, and 0.0.0.0, would reach) accepts nothing; allowed, the same
// client connects.
func TestClientRefusesWithoutConnecting(t *testing.T) {
	srv, cl := receiver(t, "127.0.0.1:0")
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	c := webhooks.NewClient(webhooks.ClientConfig{})
	for _, host := range []string{
		"127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "0.0.0.0", "[::]", "[::1]",
		"10.0.0.1", "172.16.0.1", "192.168.0.1", "[::ffff:192.168.0.1]", "[fd00::1]",
		"169.254.169.254", "[::ffff:169.254.169.254]", "[fe80::1]", "100.64.0.1",
		"224.0.0.1", "[ff02::1]", "192.0.2.1", "[2001:db8::1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]",
	} {
		err := post(c, "http://"+host+":"+port+"/hook")
		if !errors.Is(err, webhooks.ErrAddressRefused) {
			t.Errorf("%s: %v, want ErrAddressRefused", host, err)
		}
	}
	if n := cl.accepted.Load(); n != 0 {
		t.Fatalf("the receiver accepted %d connections", n)
	}
	allow, _ := webhooks.ParseAllow("127.0.0.1/32")
	c = webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}})
	if err := post(c, "http://127.0.0.1:"+port+"/hook"); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if err := post(c, "http://[::ffff:127.0.0.1]:"+port+"/hook"); err != nil {
		t.Fatalf("allowed, IPv4-mapped: %v", err)
	}
	if n := cl.accepted.Load(); n == 0 {
		t.Fatal("allowed, the receiver accepted nothing")
	}
}

// TestClientRefusesIPv6LoopbackWithoutConnecting: a receiver on ::1
// gets no connection from ::1 or its other spellings.
func TestClientRefusesIPv6LoopbackWithoutConnecting(t *testing.T) {
	srv, cl := receiver(t, "[::1]:0")
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	c := webhooks.NewClient(webhooks.ClientConfig{})
	for _, host := range []string{"[::1]", "[0:0:0:0:0:0:0:1]", "[::]", "ip6-localhost"} {
		err := post(c, "http://"+host+":"+port+"/hook")
		if !errors.Is(err, webhooks.ErrAddressRefused) && host != "ip6-localhost" { // a name /etc/hosts may lack
			t.Errorf("%s: %v, want ErrAddressRefused", host, err)
		}
	}
	if n := cl.accepted.Load(); n != 0 {
		t.Fatalf("the receiver accepted %d connections", n)
	}
}

// fakeDNS is a name server for a net.Resolver: every A question is
// answered with addr (as it is when asked), AAAA with nothing; with no
// addr set, every name does not exist.
type fakeDNS struct {
	mu   sync.Mutex
	addr netip.Addr
}

func (f *fakeDNS) set(a string) {
	f.mu.Lock()
	f.addr = netip.MustParseAddr(a)
	f.mu.Unlock()
}

func (f *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go f.serve(server)
		return client, nil
	}}
}

// serve answers the questions of one connection, framed as over TCP (a
// net.Pipe is no PacketConn).
func (f *fakeDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		b := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		var m dnsmessage.Message
		if err := m.Unpack(b); err != nil || len(m.Questions) != 1 {
			return
		}
		q := m.Questions[0]
		m.Header.Response, m.Header.Authoritative, m.Header.RCode = true, true, dnsmessage.RCodeSuccess
		f.mu.Lock()
		a := f.addr
		f.mu.Unlock()
		if !a.IsValid() {
			m.Header.RCode = dnsmessage.RCodeNameError
		} else if q.Type == dnsmessage.TypeA {
			m.Answers = []dnsmessage.Resource{{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 0},
				Body:   &dnsmessage.AResource{A: a.As4()},
			}}
		}
		out, err := m.Pack()
		if err != nil {
			return
		}
		binary.BigEndian.PutUint16(n[:], uint16(len(out)))
		if _, err := c.Write(append(n[:], out...)); err != nil {
			return
		}
	}
}

// TestClientRefusesNameResolvingInside: a partner's name that resolves to
// an allowed address is delivered to; the same name answering an inside
// address at the next attempt (DNS rebinding) is refused, and the inside
// receiver never gets a connection.
func TestClientRefusesNameResolvingInside(t *testing.T) {
	inside, insideLn := receiver(t, "127.0.0.2:0")
	port := strconv.Itoa(inside.Listener.Addr().(*net.TCPAddr).Port)
	_, outsideLn := receiver(t, "127.0.0.1:"+port)
	dns := &fakeDNS{}
	allow, _ := webhooks.ParseAllow("127.0.0.1/32") // stands for the partner's public address
	c := webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}, Resolver: dns.resolver()})
	url := "http://hooks.partner.example:" + port + "/hook"

	dns.set("127.0.0.1")
	if err := post(c, url); err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	if outsideLn.accepted.Load() != 1 {
		t.Fatalf("the allowed receiver accepted %d connections, want 1", outsideLn.accepted.Load())
	}
	c.CloseIdleConnections() // the next attempt dials again, as after a receiver's close
	for _, a := range []string{"127.0.0.2", "10.0.0.1", "169.254.169.254", "100.64.0.1"} {
		dns.set(a)
		if err := post(c, url); !errors.Is(err, webhooks.ErrAddressRefused) {
			t.Errorf("resolving to %s: %v, want ErrAddressRefused", a, err)
		}
	}
	if n := insideLn.accepted.Load(); n != 0 {
		t.Fatalf("the inside receiver accepted %d connections", n)
	}
}

// TestClientUsesNoProxy: a proxy named by the environment would connect
// on the edge's behalf, past the Guard: it is never used.
func TestClientUsesNoProxy(t *testing.T) {
	srv, cl := receiver(t, "127.0.0.1:0")
	_, proxy := receiver(t, "127.0.0.1:0")
	t.Setenv("HTTP_PROXY", "http://"+proxy.Addr().String())
	t.Setenv("HTTPS_PROXY", "http://"+proxy.Addr().String())
	allow, _ := webhooks.ParseAllow("127.0.0.1/32")
	c := webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}})
	if err := post(c, srv.URL); err != nil {
		t.Fatal(err)
	}
	if proxy.accepted.Load() != 0 || cl.accepted.Load() != 1 {
		t.Fatalf("the proxy accepted %d connections, the receiver %d; want 0 and 1",
			proxy.accepted.Load(), cl.accepted.Load())
	}
}

// TestClientKeepsAConnectionPerEndpoint: endpoints of one host delivering
// at once (a walk's events go to every endpoint together) each keep their
// connection for their next attempt: a second round of as many attempts
// at once opens none.
func TestClientKeepsAConnectionPerEndpoint(t *testing.T) {
	const endpoints = 20
	var in atomic.Int64
	var mu sync.Mutex
	all := make(chan struct{}) // closed when every attempt of a round is in
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen: %v", err)
	}
	cl := &countingListener{Listener: ln}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		ch := all
		if in.Add(1) == endpoints {
			close(all)
		}
		mu.Unlock()
		<-ch // every attempt of the round holds its connection until all are in
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	allow, _ := webhooks.ParseAllow("127.0.0.1/32")
	c := webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}})
	t.Cleanup(c.CloseIdleConnections)
	round := func() {
		mu.Lock()
		in.Store(0)
		all = make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		for i := range endpoints {
			wg.Go(func() {
				if err := post(c, srv.URL+"/hook/"+strconv.Itoa(i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	round()
	if n := cl.accepted.Load(); n != endpoints {
		t.Fatalf("the first round opened %d connections, want %d", n, endpoints)
	}
	round()
	if n := cl.accepted.Load() - endpoints; n != 0 {
		t.Fatalf("the second round opened %d connections, want 0: each endpoint's was kept", n)
	}
}
