package main

import (
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// nginxPMS starts the simulator behind a real nginx that closes idle
// client connections after keepalive (the edge is nginx's client) and
// keeps its own to the simulator; it returns nginx's base URL. Without
// nginx the test skips, or fails under CI=true (.ci/run installs it).
func nginxPMS(t *testing.T, keepalive string) string {
	t.Helper()
	bin := needProgram(t, "nginx", "nginx")
	sim := httptest.NewServer(pmsim.New(pmsim.Config{Brands: 1, HotelsPerBrand: 1200, PageSize: 100, Seed: 19, Token: "pms-secret-token"}))
	t.Cleanup(sim.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir := t.TempDir()
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // its temp paths are in the test's own directory
	}
	conf := fmt.Sprintf(`%s
daemon off;
master_process off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  keepalive_timeout %[3]s;
  upstream pms {
    server %[4]s;
    keepalive 16;
  }
  server {
    listen %[5]s;
    location / {
      proxy_pass http://pms;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, user, dir, keepalive, strings.TrimPrefix(sim.URL, "http://"), addr)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var out testkit.LogBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx:\n%s%s", out.String(), log)
		}
	})
	testkit.Eventually(t, "nginx listening on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return "http://" + addr
}

// A real nginx in front of the simulator, closing idle client connections
// after keepalive_timeout, and bursts of partner traffic further apart than
// that: nginx closes every connection the edge kept between bursts, and no
// partner sees an error. With 2s (the case the contract names; the edge's
// own idle timeout of 1 s usually closes first) and with 300ms (nginx
// always closes first).
func TestPMSBehindNginxKeepalive(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary and nginx")
	}
	for _, k := range []struct {
		keepalive string
		gap       time.Duration
	}{{"2s", 5 * time.Second}, {"300ms", time.Second}} {
		for _, m := range pmsModes {
			t.Run("keepalive-"+k.keepalive+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				p := startPartnerEdge(t, nginxPMS(t, k.keepalive), m.ttl)
				total, ids := p.truth(t)
				for round := range 4 {
					time.Sleep(k.gap) // past nginx's keep-alive timeout
					checkAnswers(t, fmt.Sprintf("burst %d", round+1), p.burst(60, ids), total)
				}
				checkBreakerClosed(t, p)
			})
		}
	}
}
