// Package grafana is the edge's Grafana dashboard as code. Dashboard builds
// it; `go generate ./observability/grafana` writes partner-edge.json, the
// file to import (or provision), and a test keeps the two equal. Every
// PromQL expression in it is checked against a running edge's /metrics
// (cmd/edge TestRulesAndDashboardMatchMetrics).
package grafana

//go:generate go run gen.go

import (
	"encoding/json"
	"fmt"
)

// File is the generated dashboard's file name, in this directory.
const File = "partner-edge.json"

// Datasource variables: the dashboard asks for a Prometheus, a Loki and a
// Tempo data source when imported, and links panels to traces through the
// Tempo one. Named as github.com/grafana/dashboard-linter wants them
// (<type>_datasource).
const (
	promDS  = "${prometheus_datasource}"
	lokiDS  = "${loki_datasource}"
	tempoDS = "${tempo_datasource}"
)

// Instance is the selector every PromQL expression filters by: the
// Prometheus target labels job and instance, added at scrape time (not in
// /metrics itself). job first: two deployments sharing a Prometheus never
// mix on a panel; instance within one.
const Instance = `job=~"$job",instance=~"$instance"`

// Job selects the recorded SLO series, which keep job (rules.yaml: by
// (job)) but no instance: an SLO is the deployment's, not one instance's.
const Job = `job=~"$job"`

type dashboard struct {
	Title         string                `json:"title"`
	UID           string                `json:"uid"`
	Description   string                `json:"description"`
	Tags          []string              `json:"tags"`
	SchemaVersion int                   `json:"schemaVersion"`
	Version       int                   `json:"version"`
	Editable      bool                  `json:"editable"`
	GraphTooltip  int                   `json:"graphTooltip"`
	Refresh       string                `json:"refresh"`
	Time          map[string]string     `json:"time"`       // from, to
	Templating    map[string][]variable `json:"templating"` // list
	Annotations   map[string]any        `json:"annotations"`
	Links         []any                 `json:"links"`
	Panels        []*Panel              `json:"panels"`
}

type variable struct {
	Name       string         `json:"name"`
	Label      string         `json:"label"`
	Type       string         `json:"type"`
	Query      any            `json:"query"`
	Datasource *datasource    `json:"datasource,omitempty"`
	Refresh    int            `json:"refresh,omitempty"`
	IncludeAll bool           `json:"includeAll,omitempty"`
	Multi      bool           `json:"multi,omitempty"`
	AllValue   string         `json:"allValue,omitempty"`
	Current    map[string]any `json:"current"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is one panel of the dashboard.
type Panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	GridPos     gridPos        `json:"gridPos"`
	Datasource  *datasource    `json:"datasource,omitempty"`
	Targets     []Target       `json:"targets,omitempty"`
	FieldConfig *fieldConfig   `json:"fieldConfig,omitempty"`
	Options     map[string]any `json:"options,omitempty"`
	Transforms  []any          `json:"transformations,omitempty"`
	Collapsed   *bool          `json:"collapsed,omitempty"`
}

// Target is one query of a panel: Expr for Prometheus, the others for
// Loki and Tempo.
type Target struct {
	RefID        string      `json:"refId"`
	Datasource   *datasource `json:"datasource,omitempty"`
	Expr         string      `json:"expr,omitempty"`
	LegendFormat string      `json:"legendFormat,omitempty"`
	Format       string      `json:"format,omitempty"`
	QueryType    string      `json:"queryType,omitempty"`
	Query        string      `json:"query,omitempty"`
	Limit        int         `json:"limit,omitempty"`
}

type gridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

type fieldConfig struct {
	Defaults  fieldDefaults `json:"defaults"`
	Overrides []any         `json:"overrides"` // {"matcher", "properties"}
}

type fieldDefaults struct {
	Unit     string   `json:"unit,omitempty"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	Links    []link   `json:"links,omitempty"`
	Mappings []any    `json:"mappings,omitempty"`
}

// link is a Grafana data link; an internal one opens a query on another
// data source (Tempo) in Explore.
type link struct {
	Title    string    `json:"title"`
	URL      string    `json:"url"`
	Internal *internal `json:"internal,omitempty"`
}

type internal struct {
	DatasourceUID  string         `json:"datasourceUid"`
	DatasourceName string         `json:"datasourceName"`
	Query          map[string]any `json:"query"`
}

// traceLink opens Tempo with a TraceQL query; the query may use Grafana's
// data link variables (${__field.labels.code}, ${__value.raw}...).
func traceLink(title, traceQL string) link {
	return link{Title: title, URL: "", Internal: &internal{
		DatasourceUID: tempoDS, DatasourceName: "Tempo",
		Query: map[string]any{"queryType": "traceql", "query": traceQL, "limit": 20},
	}}
}

func prom(refID, expr, legend string) Target {
	return Target{RefID: refID, Expr: expr, LegendFormat: legend}
}

// Dashboard returns the dashboard's JSON, indented, as written to File.
func Dashboard() ([]byte, error) {
	d := dashboard{
		Title:         "partner-edge",
		UID:           "partner-edge",
		Description:   "Hospitality Partner API v1 edge: SLOs, traffic, errors, latency, cache, PMS, limits, Redis. Runbooks: docs/runbooks.md.",
		Tags:          []string{"partner-edge"},
		SchemaVersion: 39,
		Version:       1,
		Editable:      false, // provisioned from partner-edge.json: change panels.go, not the UI
		GraphTooltip:  1,
		Refresh:       "30s",
		Time:          map[string]string{"from": "now-6h", "to": "now"},
		Annotations:   map[string]any{"list": []any{}},
		Links: []any{map[string]any{"title": "Runbooks", "type": "link", "targetBlank": true,
			"url": "https://github.com/partner-edge/partner-edge/blob/main/docs/runbooks.md"}},
		Templating: map[string][]variable{"list": {
			{Name: "prometheus_datasource", Label: "Prometheus data source", Type: "datasource", Query: "prometheus", Current: map[string]any{}},
			{Name: "loki_datasource", Label: "Loki data source", Type: "datasource", Query: "loki", Current: map[string]any{}},
			{Name: "tempo_datasource", Label: "Tempo data source", Type: "datasource", Query: "tempo", Current: map[string]any{}},
			// job: the scrape job of one deployment (a brand). Every query
			// filters by it, so deployments sharing a Prometheus do not mix.
			queryVar("job", "Job", "label_values(http_server_active_requests, job)"),
			queryVar("instance", "Instance", `label_values(http_server_active_requests{job=~"$job"}, instance)`),
		}},
	}
	d.Panels = layout(panels())
	return json.MarshalIndent(d, "", "  ")
}

// queryVar is a multi-value variable of Prometheus label values, All by
// default (what dashboard-linter asks of job and instance).
func queryVar(name, label, query string) variable {
	return variable{Name: name, Label: label, Type: "query", Datasource: &datasource{"prometheus", promDS},
		Query: query, Refresh: 2, IncludeAll: true, Multi: true, AllValue: ".+",
		Current: map[string]any{"text": "All", "value": "$__all"}}
}

// layout numbers the panels and places them: rows full width, other panels
// two to a row (8 high), a panel with W set keeps its width.
func layout(ps []*Panel) []*Panel {
	x, y := 0, 0
	for i, p := range ps {
		p.ID = i + 1
		if p.Type == "row" {
			if x > 0 {
				x, y = 0, y+8
			}
			p.GridPos = gridPos{H: 1, W: 24, X: 0, Y: y}
			y++
			continue
		}
		if p.GridPos.W == 0 {
			p.GridPos.W = 12
		}
		if x+p.GridPos.W > 24 {
			x, y = 0, y+8
		}
		p.GridPos = gridPos{H: 8, W: p.GridPos.W, X: x, Y: y}
		x += p.GridPos.W
		if p.Datasource == nil && len(p.Targets) > 0 && p.Targets[0].Expr != "" {
			p.Datasource = &datasource{"prometheus", promDS}
		}
	}
	return ps
}

func row(title string) *Panel {
	return &Panel{Type: "row", Title: title, Collapsed: ptr(false)}
}

func timeseries(title, desc, unit string, targets ...Target) *Panel {
	return &Panel{Type: "timeseries", Title: title, Description: desc, Targets: targets,
		FieldConfig: &fieldConfig{Defaults: fieldDefaults{Unit: unit}, Overrides: []any{}}}
}

func (p *Panel) withLinks(l ...link) *Panel {
	p.FieldConfig.Defaults.Links = append(p.FieldConfig.Defaults.Links, l...)
	return p
}

func (p *Panel) width(w int) *Panel { p.GridPos.W = w; return p }

// rate is sum by (by) of rate(metric{sel, instance}[$__rate_interval]).
func rate(by, metric, sel string) string {
	if sel != "" {
		sel += ","
	}
	return fmt.Sprintf("sum by (%s) (rate(%s{%s}[$__rate_interval]))", by, metric, sel+Instance)
}

const reqCount = "http_server_request_duration_seconds_count"
const reqBucket = "http_server_request_duration_seconds_bucket"
