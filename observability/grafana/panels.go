package grafana

import "fmt"

// panels is the dashboard, top to bottom. Titles are what docs/runbooks.md
// and the alerts' descriptions name: keep them in step.
func panels() []*Panel {
	slo := func(title, rec, desc string) *Panel {
		p := timeseries(title, desc, "percentunit",
			prom("A", fmt.Sprintf("%s:ratio_rate5m{%s}", rec, Job), "5m {{job}}"),
			prom("B", fmt.Sprintf("%s:ratio_rate1h{%s}", rec, Job), "1h {{job}}"),
			prom("C", fmt.Sprintf("%s:ratio_rate1d{%s}", rec, Job), "1d {{job}}"),
			prom("D", "0.999", "objective 99.9 %"))
		p.FieldConfig.Defaults.Max = ptr(1.0)
		return p
	}
	errTraces := traceLink("Traces with this code",
		`{ resource.service.name = "partner-edge" && span.partner_edge.problem.code = "${__field.labels.code}" }`)
	statusTraces := traceLink("Traces of this route and status",
		`{ resource.service.name = "partner-edge" && span.http.route = "${__field.labels.http_route}" && span.http.response.status_code = ${__field.labels.http_response_status_code} }`)
	cacheTraces := traceLink("Slow traces with this cache outcome",
		`{ resource.service.name = "partner-edge" && span.partner_edge.cache.outcome = "${__field.labels.partner_edge_cache_outcome}" } | select(duration) | duration > 50ms`)
	pmsTraces := traceLink("PMS calls in traces",
		`{ resource.service.name = "partner-edge" && (name = "pms.get_hotel" || name = "pms.list_hotels") && status = error }`)

	logTable := &Panel{Type: "table", Title: "Error log lines",
		Description: "Access lines of 5xx answers (LogQL). The trace_id column opens the trace in Tempo.",
		Datasource:  &datasource{"loki", lokiDS},
		Targets: []Target{{RefID: "A", Datasource: &datasource{"loki", lokiDS},
			Expr: `{app="partner-edge"} | json | msg="request" | status >= 500 | line_format "{{.status}} {{.code}} {{.route}} {{.trace_id}}"`}},
		Transforms: []any{
			map[string]any{"id": "extractFields", "options": map[string]any{"source": "Line", "format": "json", "replace": false}},
			map[string]any{"id": "organize", "options": map[string]any{"includeByName": map[string]bool{
				"Time": true, "status": true, "code": true, "route": true, "error": true, "request_id": true, "key_id": true, "trace_id": true}}},
		},
		FieldConfig: &fieldConfig{Overrides: []any{map[string]any{
			"matcher": map[string]any{"id": "byName", "options": "trace_id"},
			"properties": []map[string]any{{"id": "links", "value": []link{
				traceLink("Open trace ${__value.raw}", "${__value.raw}")}}},
		}}},
	}
	logTable.GridPos.W = 24
	traceTable := &Panel{Type: "table", Title: "Failed and slow traces",
		Description: "TraceQL search: 5xx or slower than 1 s. Each trace id opens the trace.",
		Datasource:  &datasource{"tempo", tempoDS},
		Targets: []Target{{RefID: "A", Datasource: &datasource{"tempo", tempoDS}, QueryType: "traceql", Limit: 20,
			Query: `{ resource.service.name = "partner-edge" && span.kind = server && (status = error || duration > 1s) }`}},
	}
	traceTable.GridPos.W = 24

	breaker := timeseries("Breaker state", "0 closed, 1 half-open, 2 open, per PMS (live, test) and instance.", "none",
		prom("A", fmt.Sprintf("max by (pms) (partner_edge_pms_breaker_state{%s})", Instance), "{{pms}}"))
	breaker.FieldConfig.Defaults.Min, breaker.FieldConfig.Defaults.Max = ptr(0.0), ptr(2.0)
	breaker.FieldConfig.Defaults.Mappings = stateMappings()
	redisState := timeseries("Redis", "Redis breaker state (0 closed, 2 open: in-process fallback), fallbacks by use, errors by kind.", "none",
		prom("A", fmt.Sprintf("max(partner_edge_redis_breaker_state{%s})", Instance), "breaker state"),
		prom("B", rate("use", "partner_edge_redis_fallbacks_total", ""), "fallback {{use}} /s"),
		prom("C", rate("kind", "partner_edge_redis_errors_total", ""), "error {{kind}} /s"))
	redisState.FieldConfig.Defaults.Mappings = stateMappings()

	return []*Panel{
		row("SLOs"),
		slo("SLO: availability", "partner_edge:slo_availability", "Share of answers not 5xx among those not 4xx (partner faults excluded), /v1/health excluded. Alerts: PartnerEdgeAvailabilityFastBurn/SlowBurn."),
		slo("SLO: latency", "partner_edge:slo_latency", "Share of cache hits within 50 ms and misses within 1 s (2xx). Alerts: PartnerEdgeLatencyFastBurn/SlowBurn."),

		row("Traffic and errors"),
		timeseries("Traffic by route", "Answers per second by route template (unmatched: no route, including shed requests).", "reqps",
			prom("A", rate("http_route", reqCount, ""), "{{http_route}}")),
		timeseries("Answers by status class", "Answers per second by status; the link opens traces of that route and status.", "reqps",
			prom("A", rate("http_route, http_response_status_code", reqCount, `http_response_status_code=~"[45].."`), "{{http_response_status_code}} {{http_route}}")).withLinks(statusTraces),
		timeseries("Errors by code", "problem+json answers per second by problem code; the link opens traces of that code.", "reqps",
			prom("A", rate("code", "partner_edge_problem_responses_total", ""), "{{code}}")).withLinks(errTraces).width(24),

		row("Latency"),
		timeseries("Latency by cache outcome", "p50 and p99 of answers by how the cache served them: hit (SLO 50 ms), miss, coalesced, stale (SLO 1 s).", "s",
			prom("A", fmt.Sprintf("histogram_quantile(0.99, sum by (le, partner_edge_cache_outcome) (rate(%s{%s}[$__rate_interval])))", reqBucket, Instance), "p99 {{partner_edge_cache_outcome}}"),
			prom("B", fmt.Sprintf("histogram_quantile(0.5, sum by (le, partner_edge_cache_outcome) (rate(%s{%s}[$__rate_interval])))", reqBucket, Instance), "p50 {{partner_edge_cache_outcome}}")).withLinks(cacheTraces),
		heatmap("Latency heatmap", "All answers except /v1/health, by duration bucket.",
			prom("A", fmt.Sprintf(`sum by (le) (rate(%s{http_route!="/v1/health",%s}[$__rate_interval]))`, reqBucket, Instance), "{{le}}")),
		timeseries("Latency by route", "p99 by route template.", "s",
			prom("A", fmt.Sprintf("histogram_quantile(0.99, sum by (le, http_route) (rate(%s{%s}[$__rate_interval])))", reqBucket, Instance), "p99 {{http_route}}")),
		timeseries("In flight and shed", "Requests in progress (cap EDGE_MAX_CONCURRENT per instance) and requests shed with 503.", "short",
			prom("A", fmt.Sprintf("sum by (instance) (http_server_active_requests{%s})", Instance), "in flight {{instance}}"),
			prom("B", fmt.Sprintf("sum(rate(partner_edge_requests_shed_total{%s}[$__rate_interval]))", Instance), "shed /s")),

		row("Cache and PMS"),
		timeseries("Cache outcomes", "Cache lookups per second: hit, miss (loaded from the PMS), coalesced (waited for another load), stale (served old data because the PMS failed).", "ops",
			prom("A", rate("pms, outcome", "partner_edge_cache_lookups_total", ""), "{{pms}} {{outcome}}")),
		timeseries("PMS attempts by outcome", "HTTP attempts to the PMS per second by outcome; retries by the outcome that caused them.", "ops",
			prom("A", rate("pms, outcome", "partner_edge_pms_attempt_duration_seconds_count", ""), "{{pms}} {{outcome}}"),
			prom("B", rate("pms, outcome", "partner_edge_pms_retries_total", ""), "retry {{pms}} {{outcome}}")).withLinks(pmsTraces),
		breaker,
		timeseries("PMS attempt latency", "p50 and p99 of one HTTP attempt to the PMS (EDGE_PMS_ATTEMPT_TIMEOUT cuts it).", "s",
			prom("A", fmt.Sprintf("histogram_quantile(0.99, sum by (le, pms) (rate(partner_edge_pms_attempt_duration_seconds_bucket{%s}[$__rate_interval])))", Instance), "p99 {{pms}}"),
			prom("B", fmt.Sprintf("histogram_quantile(0.5, sum by (le, pms) (rate(partner_edge_pms_attempt_duration_seconds_bucket{%s}[$__rate_interval])))", Instance), "p50 {{pms}}")).withLinks(pmsTraces),
		timeseries("PMS retries", "Retries per second by the outcome of the attempt that caused them.", "ops",
			prom("A", rate("pms, outcome", "partner_edge_pms_retries_total", ""), "{{pms}} {{outcome}}")),
		timeseries("Mapping rejections", "PMS records left out per hour, by reason (counted on every snapshot load).", "short",
			prom("A", fmt.Sprintf("sum by (reason) (increase(partner_edge_mapping_rejections_total{%s}[1h]))", Instance), "{{reason}}")),

		row("Walks and the events feed"),
		timeseries("Walks", "Walks of the PMS's list ended per interval by outcome (ok, failed: PartnerEdgeWalksFailing when none succeeds for 10 minutes), and list pages walked per second. A fleet walks once per TTL, on one member.", "short",
			prom("A", fmt.Sprintf("sum by (pms, outcome) (increase(partner_edge_pms_walks_total{%s}[$__rate_interval]))", Instance), "walks {{pms}} {{outcome}}"),
			prom("B", rate("pms", "partner_edge_pms_walk_pages_total", ""), "pages/s {{pms}}")),
		timeseries("Walk duration and snapshot age", "The last walk's duration by outcome, the age of the snapshot each instance serves, and EDGE_CACHE_TTL: past the TTL plus two walks, PartnerEdgeSnapshotStale.", "s",
			prom("A", fmt.Sprintf("max by (pms, outcome) (partner_edge_pms_walk_duration_seconds{%s})", Instance), "last walk {{pms}} {{outcome}}"),
			prom("B", fmt.Sprintf("max by (instance, pms) (partner_edge_pms_walk_age_seconds{%s})", Instance), "snapshot age {{pms}} {{instance}}"),
			prom("C", fmt.Sprintf("max by (pms) (partner_edge_cache_ttl_seconds{%s})", Instance), "TTL {{pms}}")),
		timeseries("Events feed", "Property change events added to the feed per interval by type (in a fleet, by the member that walked), and the events each instance holds.", "short",
			prom("A", fmt.Sprintf("sum by (pms, type) (increase(partner_edge_events_published_total{%s}[$__rate_interval]))", Instance), "{{pms}} {{type}}"),
			prom("B", fmt.Sprintf("max by (instance, pms) (partner_edge_events_length{%s})", Instance), "held {{pms}} {{instance}}")),
		timeseries("Events feed age", "Time since the walk the feed last reached (PartnerEdgeFeedStalled past the TTL plus two walks) and the age of its oldest event (how far back a cursor works).", "s",
			prom("A", fmt.Sprintf("max by (instance, pms) (partner_edge_events_head_age_seconds{%s})", Instance), "head {{pms}} {{instance}}"),
			prom("B", fmt.Sprintf("max by (pms) (partner_edge_events_age_seconds{%s})", Instance), "oldest event {{pms}}")),

		row("Webhooks"),
		timeseries("Webhook attempts by outcome", "Delivery attempts to partners' webhook endpoints per second by outcome: delivered (a 2xx), http_status, redirect, timeout, address_refused, dns_failed, tls_failed, connection_failed... (docs/webhooks.md). A failing endpoint is retried for about 28 hours, then disabled (PartnerEdgeWebhookEndpointDisabled).", "ops",
			prom("A", rate("outcome", "partner_edge_webhooks_attempts_total", ""), "{{outcome}}")),
		timeseries("Webhook delivery lag", "p99 and p50 of the time from an event's occurredAt to its delivery's 2xx (PartnerEdgeWebhookLagHigh past 5 minutes): seconds while endpoints answer, hours for the events of an endpoint that recovers from failures.", "s",
			prom("A", fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(partner_edge_webhooks_lag_seconds_bucket{%s}[$__rate_interval])))", Instance), "p99"),
			prom("B", fmt.Sprintf("histogram_quantile(0.5, sum by (le) (rate(partner_edge_webhooks_lag_seconds_bucket{%s}[$__rate_interval])))", Instance), "p50")),
		timeseries("Webhook endpoints by status", "Endpoints enabled and disabled, as the last scan of the store found them (every fleet member reports the shared store: max, not sum), and endpoints disabled per interval by the last attempt's outcome.", "short",
			prom("A", fmt.Sprintf("max by (status) (partner_edge_webhooks_endpoints{%s})", Instance), "{{status}}"),
			prom("B", fmt.Sprintf("sum by (outcome) (increase(partner_edge_webhooks_disabled_total{%s}[$__rate_interval]))", Instance), "disabled: {{outcome}}")).width(24),

		row("Limits, Redis, reloads"),
		timeseries("Rate limiting and throttling", "429 RATE_LIMITED per second (per-key quotas and the failed-auth throttle) and the throttle's share; 401 INVALID_API_KEY that feed the throttle.", "reqps",
			prom("A", fmt.Sprintf(`sum(rate(partner_edge_problem_responses_total{code="RATE_LIMITED",%s}[$__rate_interval]))`, Instance), "429 RATE_LIMITED"),
			prom("B", fmt.Sprintf("sum(rate(partner_edge_auth_throttled_total{%s}[$__rate_interval]))", Instance), "of which failed-auth throttle"),
			prom("C", fmt.Sprintf(`sum(rate(partner_edge_problem_responses_total{code="INVALID_API_KEY",%s}[$__rate_interval]))`, Instance), "401 INVALID_API_KEY")).withLinks(errTraces),
		redisState,
		timeseries("Redis command latency", "p99 of Redis commands by operation (db.client.operation.duration).", "s",
			prom("A", fmt.Sprintf("histogram_quantile(0.99, sum by (le, db_operation_name) (rate(db_client_operation_duration_seconds_bucket{%s}[$__rate_interval])))", Instance), "p99 {{db_operation_name}}")),
		timeseries("Key and certificate reloads", "Reloads of the key file and the TLS certificate by result; failed keeps the previous ones.", "short",
			prom("A", fmt.Sprintf("sum by (result) (increase(partner_edge_keys_reloads_total{%s}[$__rate_interval]))", Instance), "keys {{result}}"),
			prom("B", fmt.Sprintf("sum by (result) (increase(partner_edge_tls_reloads_total{%s}[$__rate_interval]))", Instance), "TLS {{result}}")),

		row("Shadow candidate PMS and the access log"),
		timeseries("Shadow differences", "Properties partners would see differently from the candidate PMS (PMS_CANDIDATE_URL) in the latest comparison, by kind; removed and rejected page as PartnerEdgeShadowLoses. Empty without a candidate.", "short",
			prom("A", fmt.Sprintf("max by (mode, kind) (partner_edge_shadow_differences{%s})", Instance), "{{mode}} {{kind}}")),
		timeseries("Shadow walks and last comparison", "Walks of the candidate per second by result, and the age of the latest successful comparison (PartnerEdgeShadowStale past 10 minutes).", "short",
			prom("A", rate("mode, result", "partner_edge_shadow_walks_total", ""), "walks {{mode}} {{result}} /s"),
			prom("B", fmt.Sprintf("time() - max by (mode) (partner_edge_shadow_last_comparison_timestamp_seconds{%s})", Instance), "seconds since comparison {{mode}}")),
		timeseries("Dropped log lines", "Access-log lines dropped because EDGE_ACCESS_LOG's output could not keep up (PartnerEdgeAccessLogDropped): requests answered but not logged.", "short",
			prom("A", fmt.Sprintf("sum by (instance, log) (increase(partner_edge_log_dropped_total{%s}[$__rate_interval]))", Instance), "{{log}} {{instance}}")).width(24),

		row("Logs and traces"),
		logTable,
		traceTable,
	}
}

func ptr[T any](v T) *T { return &v }

func heatmap(title, desc string, t Target) *Panel {
	t.Format = "heatmap"
	return &Panel{Type: "heatmap", Title: title, Description: desc, Targets: []Target{t},
		Options:     map[string]any{"calculate": false, "yAxis": map[string]any{"unit": "s"}, "cellGap": 1},
		FieldConfig: &fieldConfig{Overrides: []any{}}}
}

func stateMappings() []any {
	return []any{map[string]any{"type": "value", "options": map[string]any{
		"0": map[string]any{"text": "closed", "color": "green"},
		"1": map[string]any{"text": "half-open", "color": "yellow"},
		"2": map[string]any{"text": "open", "color": "red"},
	}}}
}
