package observability_test

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const rulesDir = "prometheus"

// promtool finds Debian's promtool (package prometheus). Under CI=true a
// missing promtool fails the test: the rules would go unchecked.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found: apt-get install -y prometheus (.ci/run does)")
		}
		t.Skip("promtool not installed (apt-get install -y prometheus); CI=true makes this a failure")
	}
	return p
}

// docs/operations.md, "Production kit": the rules pass promtool's checks and its unit
// tests, which fire every alert on synthetic series of its cause and keep
// it silent on a healthy fleet.
//
// The three runs are apart and at once: the days-long tests
// (rules_long_test.yaml) take most of the time, and the others need not
// wait for them.
func TestPromtoolRules(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "rules.yaml"},
		{"test", "rules", "rules_test.yaml"},
		{"test", "rules", "rules_long_test.yaml"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, args...)
			cmd.Dir = rulesDir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

var heading = regexp.MustCompile(`(?m)^#{2,3} (\S+)\s*$`)

// Every alert has a summary, a description and a runbook_url naming a
// section of docs/runbooks.md (under runbook_base when Prometheus has that
// external label), and is exercised by the promtool tests.
func TestAlertsHaveRunbooks(t *testing.T) {
	rgs, errs := rulefmt.ParseFile(filepath.Join(rulesDir, "rules.yaml"), false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	runbooks, err := os.ReadFile(filepath.Join("..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(runbooks), -1) {
		anchors[strings.ToLower(m[1])] = true
	}
	var tests []byte
	for _, f := range []string{"rules_test.yaml", "rules_long_test.yaml"} {
		b, err := os.ReadFile(filepath.Join(rulesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, b...)
	}
	// Repository-relative, made absolute by Prometheus's external label
	// runbook_base when set: no placeholder host.
	const base = "{{ with $externalLabels.runbook_base }}{{ . }}/{{ end }}docs/runbooks.md#"
	alerts := 0
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[k]) == "" {
					t.Errorf("%s: no %s", r.Alert, k)
				}
			}
			url := r.Annotations["runbook_url"]
			if anchor, ok := strings.CutPrefix(url, base); !ok || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q is not a section of docs/runbooks.md", r.Alert, url)
			}
			if r.Labels["severity"] != "page" && r.Labels["severity"] != "ticket" {
				t.Errorf("%s: severity %q, want page or ticket", r.Alert, r.Labels["severity"])
			}
			// Fired at least once (an expected alert carries exp_labels).
			fired := regexp.MustCompile(`alertname: ` + r.Alert + `\n\s+exp_alerts:\n\s+- exp_labels:`)
			if !fired.Match(tests) {
				t.Errorf("%s: no promtool test fires it", r.Alert)
			}
		}
	}
	if alerts < 11 {
		t.Errorf("%d alerts, want the 4 burn-rate alerts and the 7 cause alerts", alerts)
	}
}
