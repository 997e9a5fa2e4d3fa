package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hbollon/go-edlib"

	"github.com/partner-edge/partner-edge/cmd/internal/settingval"
)

// knownEnv are the EDGE_* and PMS_* variables something of this module
// reads: every row of settingTable, which is the one place a setting is
// declared, so a setting added there is known here at once. (cmd/pmsim
// reads PMS_TOKEN, a row too; the OTEL_* variables and the Go runtime's
// are not ours to police.)
func knownEnv() map[string]bool {
	known := map[string]bool{}
	for _, st := range settingTable() {
		known[st.env] = true
	}
	return known
}

// checkEnviron refuses an EDGE_* or PMS_* variable of environ (os.Environ's
// NAME=value list) that the edge does not read (docs/contract.md section
// 21): a misspelt setting would otherwise be ignored without a word
// (EDGE_TLS_CERT_FILE serving plain HTTP). Every command of the program
// follows the rule, so it runs before run dispatches. The error names each
// unknown variable and, when one is close, the setting it probably means.
// Variables Kubernetes sets for the Services of the namespace (service
// links: PMS_SERVICE_HOST, PMS_PORT=tcp://..., docs/contract.md section 22)
// are the platform's, not misspelt settings: ignored unless a setting has
// that name.
func checkEnviron(environ []string) error {
	known := knownEnv()
	names := slices.Sorted(maps.Keys(known))
	var errs []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "EDGE_") && !strings.HasPrefix(name, "PMS_") || known[name] ||
			settingval.ServiceLink(name, value) { // Kubernetes' own, for a Service named pms or edge...
			continue
		}
		msg := "the edge reads no such variable (edge --help lists its settings)"
		if near := closest(name, names); near != "" {
			msg = "did you mean " + near + "?"
		}
		errs = append(errs, fmt.Errorf("unknown setting %s: %s", name, msg))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("bad settings:\n%w", errors.Join(errs...))
}

// closest is the known name an unknown one most probably meant: one that
// is the start of it or starts it (EDGE_TLS_CERT_FILE: EDGE_TLS_CERT), the
// nearest in length of those; else the nearest by edit distance within a
// third of its length (optimal string alignment, go-edlib's: a swap of two
// neighbours is one edit, so EDGE_REDIS_ULR is one from EDGE_REDIS_URL) (PMS_BASEURL: PMS_BASE_URL); "" when none is close.
// Ties go to the first in names (sorted).
func closest(name string, names []string) string {
	best, bestD := "", 0
	for _, k := range names {
		if strings.HasPrefix(name, k+"_") || strings.HasPrefix(k, name+"_") {
			if d := len(k) - len(name); best == "" || abs(d) < bestD {
				best, bestD = k, abs(d)
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

func abs(n int) int { return max(n, -n) }
