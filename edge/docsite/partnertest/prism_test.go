package partnertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// violation is one entry of Prism's sl-violations header.
type violation struct {
	Location []string `json:"location"`
	Severity string   `json:"severity"`
	Code     any      `json:"code"`
	Message  string   `json:"message"`
}

// Prism (pinned in .ci/partner) as a validating proxy in front of the demo
// finds no violation in a request with a malformed traceparent nor in its
// answer, and none in the edge's answer to /v1/properties/ (acceptance 4).
//
// Prism routes /properties/ to GET /properties/{propertyId} with an empty
// propertyId and reports that request as lacking its path parameter: the
// request is indeed not one of the API's (the edge answers 400
// TRAILING_SLASH), and no document can make an empty path segment a valid
// parameter. The answer is what the document must describe, and does.
func TestPrismProxyFindsNoViolation(t *testing.T) {
	prism := nodeTool(t, "partner", "prism")
	d := startDemo(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	doc, _ := filepath.Abs(filepath.Join(repoRoot, "docs/openapi.yaml"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, prism, "proxy", doc, strings.TrimSuffix(d.base, "/"),
		"--host", "127.0.0.1", "--port", fmt.Sprint(port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	var mu sync.Mutex
	var logLines []string
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			logLines = append(logLines, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), "Prism is listening") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(3 * time.Minute): // a start-up bound on a busy machine
		mu.Lock()
		t.Fatalf("Prism did not start:\n%s", strings.Join(logLines, "\n"))
	}
	proxy := fmt.Sprintf("http://127.0.0.1:%d", port)
	ua := "partnertest-prism/1.0"

	status, hdr, body := call(t, "GET", proxy+"/properties?perPage=2", "Authorization", "Bearer "+liveKey, "User-Agent", ua,
		"traceparent", "00-not-a-trace-id-zz")
	if status != 200 || hdr.Get("Sl-Violations") != "" {
		t.Errorf("malformed traceparent through Prism: %d, violations %s\n%s", status, hdr.Get("Sl-Violations"), body)
	}
	if hdr.Get("Traceparent") == "" {
		t.Error("the answer carries no Traceparent although the request sent one")
	}

	status, hdr, body = call(t, "GET", proxy+"/properties/", "Authorization", "Bearer "+liveKey, "User-Agent", ua)
	if status != 400 || !strings.Contains(string(body), `"code":"TRAILING_SLASH"`) {
		t.Fatalf("/v1/properties/ through Prism: %d %s", status, body)
	}
	if v := hdr.Get("Sl-Violations"); v != "" {
		var vs []violation
		if err := json.Unmarshal([]byte(v), &vs); err != nil {
			t.Fatalf("sl-violations %q: %v", v, err)
		}
		for _, x := range vs {
			if len(x.Location) == 0 || x.Location[0] != "request" || len(x.Location) < 2 || x.Location[1] != "path" {
				t.Errorf("/v1/properties/: Prism reports %+v", x)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logLines {
		if strings.Contains(l, "Violation: response") {
			t.Errorf("Prism: %s", l)
		}
	}
}
