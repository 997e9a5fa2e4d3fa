package main

import "github.com/partner-edge/partner-edge/cmd/internal/settingval"

// checkEnviron refuses an EDGE_* or PMS_* variable of environ (os.Environ's
// NAME=value list) that is no row of settingTable (docs/contract.md section
// 21), naming the setting it probably means (settingval.CheckEnviron).
// Every command of the program follows the rule, so it runs before run
// dispatches. (cmd/pmsim reads PMS_TOKEN, a row too; the OTEL_* variables
// and the Go runtime's are not ours to police.) Variables Kubernetes sets
// for the Services of the namespace (service links: PMS_SERVICE_HOST,
// PMS_PORT=tcp://..., docs/contract.md section 22) are the platform's.
func checkEnviron(environ []string) error {
	return settingval.CheckEnviron(environ, []string{"EDGE_", "PMS_"}, settingTable(), "edge")
}
