//go:build ignore

// gen writes the dashboard's JSON (go generate ./observability/grafana).
package main

import (
	"log"
	"os"

	"github.com/partner-edge/partner-edge/observability/grafana"
)

func main() {
	b, err := grafana.Dashboard()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(grafana.File, append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
}
