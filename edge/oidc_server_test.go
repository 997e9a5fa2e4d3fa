package edge_test

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// oidcDir holds the authorization server the token tests run: oidc-provider
// (npm, pinned by package-lock.json) with the project's config, server.mjs.
var oidcDir = filepath.Join("..", ".ci", "oidc")

// oidcServer is a running oidc-provider process on loopback.
type oidcServer struct {
	t        testing.TB
	issuer   string
	port     string
	audience string
	cmd      *exec.Cmd
	done     chan struct{}
}

// needOIDC fails the test under CI=true when the authorization server
// cannot run (no node, or node_modules not installed), and skips it
// otherwise, saying why either way (go test -v shows the reason; .ci/run
// sets CI=true, so there a missing install is a failure, never a skip).
func needOIDC(t testing.TB) {
	t.Helper()
	requireTool(t, oidcMissing(exec.LookPath, oidcDir), os.Getenv("CI") == "true")
}

// oidcMissing says why the authorization server cannot run from dir, or ""
// when it can. lookPath is exec.LookPath.
func oidcMissing(lookPath func(string) (string, error), dir string) string {
	if _, err := lookPath("node"); err != nil {
		return "node is not installed (apt-get install nodejs npm)"
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err != nil {
		return "oidc-provider is not installed: run npm ci --prefix .ci/oidc (go test -v shows each skipped test)"
	}
	return ""
}

// requireTool fails t when why is not empty and ci is set, and skips it
// when only why is: a tool CI installs is never silently missing there.
func requireTool(t testing.TB, why string, ci bool) {
	t.Helper()
	switch {
	case why == "":
	case ci:
		t.Fatalf("CI=true and the real authorization server cannot start: %s", why)
	default:
		t.Skipf("SKIP (no authorization server): %s; with CI=true this fails", why)
	}
}

// rsaJWK makes a fresh RS256 signing key, private (for the server's JWKS).
func rsaJWK(t testing.TB, kid string) jose.JSONWebKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}
}

// startOIDC starts oidc-provider on port ("0": any free port) signing with
// the first of keys and publishing them all.
func startOIDC(t testing.TB, port, audience string, keys ...jose.JSONWebKey) *oidcServer {
	t.Helper()
	needOIDC(t)
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir = oidcDir
	cmd.Env = append(os.Environ(), "PORT="+port, "JWKS_FILE="+jwksFile, "AUDIENCE="+audience)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start oidc-provider: %v", err)
	}
	s := &oidcServer{t: t, audience: audience, cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if after, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				lines <- after
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(s.stop)
	select {
	case s.issuer = <-lines:
	case <-s.done:
		t.Fatalf("oidc-provider exited before serving: %s", stderr.String())
	case <-time.After(2 * time.Minute): // a bound on start-up, not a timed assertion
		t.Fatalf("oidc-provider did not start within 2 minutes: %s", stderr.String())
	}
	u, err := url.Parse(s.issuer)
	if err != nil {
		t.Fatal(err)
	}
	s.port = u.Port()
	return s
}

// stop ends the process and waits for it (idempotent).
func (s *oidcServer) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// restart stops the server and starts it again on the same port with
// another key set: the issuer URL stays, the signing keys change.
func (s *oidcServer) restart(keys ...jose.JSONWebKey) *oidcServer {
	s.stop()
	n := startOIDC(s.t, s.port, s.audience, keys...)
	if n.issuer != s.issuer {
		s.t.Fatalf("restarted issuer %s, want %s", n.issuer, s.issuer)
	}
	return n
}

// token gets an access token with the client credentials grant; resource
// "" asks for the default resource (the audience).
func (s *oidcServer) token(client, scope, resource string) string {
	s.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	req, err := http.NewRequest(http.MethodPost, s.issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("token request: %v", err)
	}
	defer res.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || json.Unmarshal(raw, &body) != nil || body.AccessToken == "" {
		s.t.Fatalf("token for %s (scope %q): %d %s", client, scope, res.StatusCode, raw)
	}
	if strings.Count(body.AccessToken, ".") != 2 {
		s.t.Fatalf("token for %s is not a JWT", client)
	}
	return body.AccessToken
}
