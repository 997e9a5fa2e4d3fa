package settingval

import (
	"slices"
	"testing"
)

// RedactArgs, form by form: both flag spellings, both value forms, a URL's
// password, and what is no secret left alone.
func TestRedactArgs(t *testing.T) {
	in := []string{"/usr/bin/edge", "--pms-token", "t1", "-pms-token=t2", "--fleet-secret=s1", "-fleet-secret", "s2",
		"--pms-candidate-token", "t3", "--redis-url=redis://:hunter2@redis:6379/0", "--tls-key", "/etc/tls.key",
		"--brand", "aurora", "--pms-token"}
	want := []string{"/usr/bin/edge", "--pms-token", "xxxxx", "-pms-token=xxxxx", "--fleet-secret=xxxxx", "-fleet-secret", "xxxxx",
		"--pms-candidate-token", "xxxxx", "--redis-url=redis://:xxxxx@redis:6379/0", "--tls-key", "/etc/tls.key",
		"--brand", "aurora", "--pms-token"}
	orig := slices.Clone(in)
	if got := RedactArgs(in); !slices.Equal(got, want) {
		t.Errorf("RedactArgs:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("RedactArgs modified its argument: %q", in)
	}
}
