package clientaddr

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
)

func TestParseTrusted(t *testing.T) {
	ps, err := ParseTrusted(" 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32,::ffff:198.51.100.0/120,")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "198.51.100.0/24"}
	if len(ps) != len(want) {
		t.Fatalf("got %v", ps)
	}
	for i, p := range ps {
		if p.String() != want[i] {
			t.Errorf("entry %d = %s, want %s", i, p, want[i])
		}
	}
	if ps, err := ParseTrusted(""); err != nil || len(ps) != 0 {
		t.Errorf("empty: %v, %v", ps, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.0/8;192.0.2.0/24", "10.0.0"} {
		if _, err := ParseTrusted(bad); err == nil || !strings.Contains(err.Error(), "is not a CIDR") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestResolve(t *testing.T) {
	trusted, err := ParseTrusted("10.0.0.0/8,2001:db8:1::/48")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer: its XFF is ignored", "203.0.113.9:4000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"untrusted peer without XFF", "203.0.113.9:4000", nil, "203.0.113.9"},
		{"trusted peer without XFF is the client", "10.1.2.3:4000", nil, "10.1.2.3"},
		{"trusted peer: right-most entry", "10.1.2.3:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"spoofed left entries ignored", "10.1.2.3:4000", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"trusted hops skipped", "10.1.2.3:4000", []string{"1.1.1.1, 198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"several header lines, last is rightmost", "10.1.2.3:4000", []string{"198.51.100.1", "10.0.0.5"}, "198.51.100.1"},
		{"all trusted: left-most", "10.1.2.3:4000", []string{"10.0.0.1,10.0.0.2"}, "10.0.0.1"},
		{"garbage stops at the last vouched address", "10.1.2.3:4000", []string{"198.51.100.1, bogus"}, "10.1.2.3"},
		{"entry with port", "10.1.2.3:4000", []string{"198.51.100.1:555"}, "198.51.100.1"},
		{"IPv6 peer", "[2001:db8:2::1]:4000", []string{"198.51.100.1"}, "2001:db8:2::1"},
		{"trusted IPv6 proxy", "[2001:db8:1::1]:4000", []string{"[2001:db8:9::5]:80"}, "2001:db8:9::5"},
		{"IPv4-mapped peer", "[::ffff:10.1.2.3]:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"peer not an address", "pipe", []string{"198.51.100.1"}, "pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/", nil)
			r.RemoteAddr = tt.peer
			if tt.xff != nil {
				r.Header["X-Forwarded-For"] = tt.xff
			}
			if got := Resolve(r, trusted).String(); got != tt.want {
				t.Errorf("client = %q, want %q", got, tt.want)
			}
		})
	}
}

// A long chain of trusted-looking entries costs bounded work.
func TestResolveBounded(t *testing.T) {
	trusted, _ := ParseTrusted("10.0.0.0/8")
	r := httptest.NewRequest("GET", "/v1/", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "198.51.100.1"+strings.Repeat(",10.0.0.2", 10_000))
	if got := Resolve(r, trusted).String(); got != "10.0.0.2" {
		t.Errorf("client = %q", got)
	}
}

func TestThrottleKey(t *testing.T) {
	for addr, id := range map[string]string{
		"198.51.100.7:1":           "198.51.100.7",
		"[2001:db8:1:2:3:4:5:6]:1": "2001:db8:1:2::/64",
		"pipe":                     "pipe",
	} {
		want := ratelimit.Key{Kind: ratelimit.Address, ID: id}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		if got := Resolve(r, nil).ThrottleKey(); got != want {
			t.Errorf("%s: %+v, want %+v", addr, got, want)
		}
	}
}

// An IPv4 client, direct or behind a trusted proxy, costs no allocation:
// its text is the one the request carried (every request reads it).
func TestResolveIPv4NoAllocation(t *testing.T) {
	trusted, _ := ParseTrusted("10.0.0.0/8")
	for _, tc := range []struct{ peer, xff, want string }{
		{"203.0.113.9:4000", "", "203.0.113.9"},
		{"10.1.2.3:4000", "198.51.100.1, 10.0.0.7", "198.51.100.1"},
	} {
		r := httptest.NewRequest("GET", "/v1/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		var c Addr
		if n := testing.AllocsPerRun(100, func() {
			c = Resolve(r, trusted)
			_ = c.ThrottleKey()
		}); n != 0 {
			t.Errorf("%s: %v allocations", tc.peer, n)
		}
		if c.String() != tc.want || c.ThrottleKey().ID != tc.want {
			t.Errorf("%s: %q, bucket %q; want %q", tc.peer, c, c.ThrottleKey().ID, tc.want)
		}
	}
}
