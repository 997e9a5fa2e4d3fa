package grafana_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestLocalStackProvisioning: the local observability stack
// (docs/deploy/observability) provisions this dashboard and a Prometheus
// data source whose exemplars (trace_id) open the trace in its Jaeger data
// source; every file compose.yaml mounts exists. (promtool checks its
// Prometheus configuration in CI; TestJaegerTraceTrees starts Jaeger on
// its Jaeger configuration.)
func TestLocalStackProvisioning(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "deploy", "observability")
	read := func(name string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var ds struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, Access, URL string
			IsDefault                    bool `json:"isDefault"`
			JSONData                     struct {
				ExemplarTraceIDDestinations []struct {
					Name          string `json:"name"`
					DatasourceUID string `json:"datasourceUid"`
				} `json:"exemplarTraceIdDestinations"`
			} `json:"jsonData"`
		}
	}
	read("grafana/datasources.yaml", &ds)
	uids := map[string]string{}
	for _, d := range ds.Datasources {
		uids[d.UID] = d.Type
	}
	var linked bool
	for _, d := range ds.Datasources {
		for _, e := range d.JSONData.ExemplarTraceIDDestinations {
			if d.Type == "prometheus" && e.Name == "trace_id" && uids[e.DatasourceUID] == "jaeger" {
				linked = true
			}
		}
	}
	if !linked {
		t.Error("no Prometheus data source whose trace_id exemplars open a Jaeger data source")
	}

	var compose struct {
		Services map[string]struct {
			Image       string
			Command     []string
			Environment map[string]string
			Volumes     []string
			Ports       []string
			ExtraHosts  []string `json:"extra_hosts"`
		}
	}
	read("compose.yaml", &compose)
	for name, s := range compose.Services {
		for _, v := range s.Volumes {
			src := strings.Split(v, ":")[0]
			if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
				t.Errorf("%s mounts %s: %v", name, src, err)
			}
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s beyond loopback", name, p)
			}
		}
	}
	if !strings.Contains(strings.Join(compose.Services["prometheus"].Command, " "), "--enable-feature=exemplar-storage") {
		t.Error("Prometheus runs without exemplar storage")
	}
	var dashboards bool
	for _, v := range compose.Services["grafana"].Volumes {
		dashboards = dashboards || strings.Contains(v, "observability/grafana/partner-edge.json:/var/lib/grafana/dashboards/")
	}
	if !dashboards {
		t.Error("Grafana is not given the dashboard")
	}
}
