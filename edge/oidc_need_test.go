package edge_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// outcomeTB records how requireTool ended a test, without ending this one.
type outcomeTB struct {
	testing.TB
	failed, skipped string
}

func (o *outcomeTB) Helper()                      {}
func (o *outcomeTB) Fatalf(f string, args ...any) { o.failed = fmt.Sprintf(f, args...) }
func (o *outcomeTB) Skipf(f string, args ...any)  { o.skipped = fmt.Sprintf(f, args...) }

// docs/contract.md section 18: without node or `npm ci --prefix .ci/oidc` the token
// tests fail under CI=true and otherwise skip saying what to run; with both
// they run.
func TestNeedOIDCFailsUnderCI(t *testing.T) {
	noNode := func(string) (string, error) { return "", errors.New("not found") }
	node := func(string) (string, error) { return "/usr/bin/node", nil }
	empty := filepath.Join(t.TempDir(), "oidc") // no node_modules
	for _, tc := range []struct {
		name         string
		why          string
		ci           bool
		fail, skip   bool
		mentionInWhy string
	}{
		{"no node, CI", oidcMissing(noNode, oidcDir), true, true, false, "node"},
		{"no node, local", oidcMissing(noNode, oidcDir), false, false, true, "node"},
		{"not installed, CI", oidcMissing(node, empty), true, true, false, "npm ci --prefix .ci/oidc"},
		{"not installed, local", oidcMissing(node, empty), false, false, true, "npm ci --prefix .ci/oidc"},
	} {
		o := &outcomeTB{TB: t}
		requireTool(o, tc.why, tc.ci)
		if (o.failed != "") != tc.fail || (o.skipped != "") != tc.skip {
			t.Errorf("%s: failed %q, skipped %q", tc.name, o.failed, o.skipped)
		}
		if msg := o.failed + o.skipped; !strings.Contains(msg, tc.mentionInWhy) {
			t.Errorf("%s: %q does not say what is missing (%s)", tc.name, msg, tc.mentionInWhy)
		}
	}
	o := &outcomeTB{TB: t}
	requireTool(o, "", true)
	if o.failed != "" || o.skipped != "" {
		t.Errorf("nothing missing: failed %q, skipped %q", o.failed, o.skipped)
	}
}
