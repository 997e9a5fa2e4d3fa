package settingval

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hbollon/go-edlib"
)

// CheckEnviron refuses each variable of environ (os.Environ's NAME=value
// list) that starts with one of prefixes but is no row of table
// (docs/contract.md section 21): a misspelt setting would otherwise be
// ignored without a word (EDGE_TLS_CERT_FILE serving plain HTTP). The
// error names each unknown variable and, when one is close, the setting it
// probably means (Closest); program names the command whose --help lists
// the settings. Variables Kubernetes sets for the Services of the
// namespace (ServiceLink) are the platform's, not misspelt settings:
// ignored unless a setting has that name.
func CheckEnviron(environ []string, prefixes []string, table []*Setting, program string) error {
	names := make([]string, 0, len(table))
	for _, st := range table {
		names = append(names, st.Env)
	}
	slices.Sort(names)
	var errs []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) ||
			slices.Contains(names, name) || ServiceLink(name, value) {
			continue
		}
		msg := fmt.Sprintf("the %s reads no such variable (%[1]s --help lists its settings)", program)
		if near := Closest(name, names); near != "" {
			msg = "did you mean " + near + "?"
		}
		errs = append(errs, fmt.Errorf("unknown setting %s: %s", name, msg))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("bad settings:\n%w", errors.Join(errs...))
}

// Closest is the name of names an unknown one most probably meant: one
// that is the start of it or starts it (EDGE_TLS_CERT_FILE:
// EDGE_TLS_CERT), the nearest in length of those; else the nearest by
// edit distance within a third of its length (PMS_BASEURL: PMS_BASE_URL),
// a swap of two neighbours counted as one edit (optimal string alignment:
// EDGE_REDIS_ULR is one from EDGE_REDIS_URL, two from EDGE_REDIS_TLS);
// "" when none is close. Ties go to the first in names.
func Closest(name string, names []string) string {
	best, bestD := "", 0
	for _, k := range names {
		if strings.HasPrefix(name, k+"_") || strings.HasPrefix(k, name+"_") {
			if d := max(len(k)-len(name), len(name)-len(k)); best == "" || d < bestD {
				best, bestD = k, d
			}
		}
	}
	if best != "" {
		return best
	}
	bestD = len(name)/3 + 1
	for _, k := range names {
		if d := edlib.OSADamerauLevenshteinDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}
