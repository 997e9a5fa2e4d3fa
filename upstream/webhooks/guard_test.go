package webhooks_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// refusedAddrs names one address of every refused range, in each spelling
// that reaches it.
var refusedAddrs = []string{
	"127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1", // loopback
	"10.0.0.1", "172.16.0.1", "172.31.255.254", "192.168.1.1", // RFC 1918
	"::ffff:10.0.0.1", "::ffff:192.168.1.1", "::ffff:172.20.0.1",
	"fc00::1", "fd12:3456:789a::1", // RFC 4193
	"169.254.169.254", "169.254.0.1", "::ffff:169.254.169.254", "fe80::1", "febf::1", "fec0::1", // link-local, metadata
	"100.64.0.1", "100.127.255.254", "::ffff:100.64.0.1", // CGNAT
	"224.0.0.1", "239.255.255.250", "ff02::1", "ff05::2", "::ffff:224.0.0.1", // multicast
	"0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0", // unspecified, this network
	"192.0.2.1", "198.51.100.7", "203.0.113.9", "2001:db8::1", "3fff::1", "198.18.0.1", // documentation, benchmarking
	"255.255.255.255", "240.0.0.1", // reserved, broadcast
	"64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", // NAT64 of inside addresses, local-use NAT64
	"2002:a00:1::1", "2002:7f00:1::", "2002:a9fe:a9fe::", // 6to4 of inside addresses
	"2001::1", "::127.0.0.1", "100::1", "192.0.0.8", "192.88.99.1",
}

var allowedAddrs = []string{
	"8.8.8.8", "1.1.1.1", "151.101.1.69", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e",
	"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	"100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "169.253.255.255", "11.0.0.1",
}

func TestGuardRefusesInsideRanges(t *testing.T) {
	var g webhooks.Guard
	for _, s := range refusedAddrs {
		if g.Allowed(netip.MustParseAddr(s)) {
			t.Errorf("%s allowed", s)
		}
	}
	for _, s := range allowedAddrs {
		if !g.Allowed(netip.MustParseAddr(s)) {
			t.Errorf("%s refused", s)
		}
	}
	if g.Allowed(netip.MustParseAddr("fe80::1%eth0")) {
		t.Error("a zoned link-local address allowed")
	}
}

func TestGuardAllowList(t *testing.T) {
	allow, err := webhooks.ParseAllow("127.0.0.1/32, 10.1.0.0/16 fd00::1")
	if err != nil {
		t.Fatal(err)
	}
	g := webhooks.Guard{Allow: allow}
	for s, want := range map[string]bool{
		"127.0.0.1": true, "::ffff:127.0.0.1": true, "127.0.0.2": false, "::1": false,
		"10.1.2.3": true, "::ffff:10.1.2.3": true, "10.2.0.1": false,
		"fd00::1": true, "fd00::2": false, "169.254.169.254": false, "8.8.8.8": true,
	} {
		if got := g.Allowed(netip.MustParseAddr(s)); got != want {
			t.Errorf("allow %v: Allowed(%s) = %v, want %v", allow, s, got, want)
		}
	}
}

func TestParseAllow(t *testing.T) {
	got, err := webhooks.ParseAllow(" 10.1.2.3/16,::1 ,,192.168.0.7 ::ffff:172.16.0.0/108")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.0.0/16", "::1/128", "192.168.0.7/32", "172.16.0.0/12"}
	if len(got) != len(want) {
		t.Fatalf("ParseAllow = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("ParseAllow[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	if got, err := webhooks.ParseAllow(""); err != nil || got != nil {
		t.Errorf("ParseAllow(\"\") = %v, %v; want nothing", got, err)
	}
	_, err = webhooks.ParseAllow("10.0.0.0/8,localhost,10.0.0.0/33")
	if err == nil || !strings.Contains(err.Error(), `"localhost"`) || !strings.Contains(err.Error(), `"10.0.0.0/33"`) {
		t.Errorf("ParseAllow of two bad entries: %v, want both named", err)
	}
}
