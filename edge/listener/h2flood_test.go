package listener_test

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/partner-edge/partner-edge/edge/listener"
)

// h2Conn opens a raw HTTP/2 connection to e: TLS with ALPN h2, the client
// preface and an empty SETTINGS frame.
func h2Conn(t *testing.T, e *tlsEdge) (*tls.Conn, *http2.Framer) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", e.addr,
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN %q; want h2", p)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return conn, fr
}

func headerBlock(fields ...string) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return buf.Bytes()
}

// HTTP/2 rapid reset (CVE-2023-44487): 20,000 requests each cancelled at
// once by RST_STREAM never run more handlers at a time than the stream
// limit (250), and the edge keeps answering other clients.
func TestHTTP2RapidReset(t *testing.T) {
	var running, peak, started atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := running.Add(1)
		defer running.Add(-1)
		started.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select { // a handler that works until its request is cancelled
		case <-r.Context().Done():
		case <-time.After(2 * time.Second): // the handler's own work, a bound; cancellation is the event awaited
		}
	})
	e := serveTLS(t, listener.ServeConfig{Handler: h})
	conn, fr := h2Conn(t, e)
	go func() { // drain the server's frames; ends when the connection does
		for {
			if _, err := fr.ReadFrame(); err != nil {
				return
			}
		}
	}()
	block := headerBlock(":method", "GET", ":scheme", "https", ":authority", "edge", ":path", "/v1/health")
	sent := 0
	for id := uint32(1); sent < 20_000; id += 2 {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true}); err != nil {
			break // the server closed the connection: also a defence
		}
		if err := fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			break
		}
		sent++
	}
	conn.Close()
	t.Logf("%d requests sent and reset; %d handlers started, at most %d at a time", sent, started.Load(), peak.Load())
	if p := peak.Load(); p > 260 {
		t.Errorf("%d handlers ran at once; want at most the stream limit (250)", p)
	}
	// Other clients are still served.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	res, err := client.Get("https://" + e.addr + "/v1/health")
	if err != nil {
		t.Fatalf("after the flood: %v", err)
	}
	res.Body.Close()
}

// HTTP/2 CONTINUATION flood (CVE-2023-45288): a header block that never
// ends (HEADERS without END_HEADERS, then CONTINUATION frames of 16 KB for
// ever) is cut off near MaxHeaderBytes (64 KiB): the server ends the
// connection long before 10 MB have been sent, and no handler runs.
func TestHTTP2ContinuationFlood(t *testing.T) {
	var reached atomic.Bool
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) })
	e := serveTLS(t, listener.ServeConfig{Handler: h})
	conn, fr := h2Conn(t, e)
	closed := make(chan string, 1)
	go func() {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				closed <- "connection ended: " + err.Error()
				return
			}
			if ga, ok := f.(*http2.GoAwayFrame); ok {
				closed <- "GOAWAY " + ga.ErrCode.String()
				return
			}
		}
	}()
	first := headerBlock(":method", "GET", ":scheme", "https", ":authority", "edge", ":path", "/v1/health")
	pad := headerBlock("x-pad", strings.Repeat("p", 16_000))
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first, EndStream: true}); err != nil {
		t.Fatal(err)
	}
	sent := len(first)
	var why string
	_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	for sent < 10<<20 && why == "" {
		select {
		case why = <-closed:
			continue
		default:
		}
		if err := fr.WriteContinuation(1, false, pad); err != nil {
			why = "write failed: " + err.Error()
			break
		}
		sent += len(pad)
	}
	if why == "" {
		select {
		case why = <-closed:
		case <-time.After(10 * time.Second):
		}
	}
	t.Logf("%d bytes of header block sent; %s", sent, why)
	if sent >= 10<<20 || why == "" {
		t.Errorf("the server took %d bytes of one header block without ending the connection", sent)
	}
	if reached.Load() {
		t.Errorf("a handler ran for the endless header block")
	}
}
