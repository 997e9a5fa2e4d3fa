package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/partner-edge/partner-edge/cmd/internal/settingval"
	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/docsite"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// settings are the edge's configuration (operations.md), from the
// environment with flags of the same meaning overriding it.
type settings struct {
	Addr, AdminAddr          string
	Brand, DocsURL, KeysFile string
	CodeSource               mapping.CodeSource
	CacheTTL, CacheStale     time.Duration
	TLSCert, TLSKey          string
	PMSBaseURL, PMSSandbox   string
	PMSToken                 string
	PMSTimeout, PMSAttempt   time.Duration
	PMSWalkTimeout           time.Duration // budget of one walk of the list (docs/contract.md section 24)
	DrainDelay, ShutdownWait time.Duration
	LogFormat                string
	LogLevel                 slog.Level
	AccessLog                string  // stdout, stderr, off or a file path
	AccessLogSample          float64 // fraction of successful lines written
	RatePerSecond            float64
	RateBurst                int
	RequestTimeout           time.Duration
	MaxConcurrent            int
	AuthFailLimit            int                // failed authentications a minute per client address; 0: off
	TrustedProxies           []netip.Prefix     // whose X-Forwarded-For is believed
	Redis                    redisconn.Settings // the fleet's Redis, one of three forms (docs/contract.md section 16); none: in-process (fleet.go)
	DocsPath                 string             // serve the documentation site here (default /docs); empty: not served (docs.go)
	PublicURL                string             // the URL partners call: the base of DocsURL; empty: none given (docs.go)
	DocsContact              string             // the contact the documentation site shows (docsite.ParseContact); empty: none
	AddrSet                  bool               // EDGE_ADDR given by the operator: the demo keeps it (demo.go)
	FleetSecret              []byte             // authenticates what instances share through Redis
	PMSMaxWalkBytes          int64              // bound on the total size of one PMS list walk, and on what it keeps
	OAuthIssuer              string             // with OAuthAudience: access tokens on (docs/contract.md section 12); empty: off
	OAuthAudience            string
	OAuthJWKSHosts           []string // hosts besides the issuer's the jwks_uri may name (docs/contract.md section 17)
	CandidateURL             string   // shadow candidate PMS; empty: none (shadow.go)
	CandidateToken           string
	CandidateMaxWalkBytes    int64          // bound of one candidate walk (docs/contract.md section 17)
	TraceSlow                time.Duration  // a slower request keeps its trace (docs/observability.md); 0: off
	TraceKeepRate            int            // traces kept by outcome a second (docs/observability.md); 0: no bound
	EventsRetention          time.Duration  // how long property change events are kept (docs/contract.md section 23)
	EventsMax                int            // at most this many events kept per PMS
	EventsMaxBytes           int64          // at most this many bytes of events held per PMS (docs/contract.md section 25)
	DataDir                  string         // where a single edge keeps its feed across restarts; empty: memory only (docs/contract.md section 25)
	ListHold                 time.Duration  // how long a replaced snapshot stays held for asOf (docs/contract.md section 25)
	WebhookAllow             []netip.Prefix // ranges deliveries may connect to although inside (docs/webhooks.md); nil: none
	WebhookAllowHTTP         bool           // deliveries may go to http:// URLs; false: https only
}

// lookupEnv is os.LookupEnv or its like (settingval.LookupEnv).
type lookupEnv = settingval.LookupEnv

// settingTable is the one place a setting of the edge is declared: each
// row a variable with a flag over it (settingval.Setting). `edge --help`
// prints it and `go generate ./cmd/edge` writes the settings table of
// docs/operations.md from it (settings_docs_test.go). One text, Doc,
// serves both unless it is a paragraph: then a shorter Help is --help's.
func settingTable() []*settingval.Setting {
	return []*settingval.Setting{
		{Env: "EDGE_ADDR", Flag: "addr", Def: ":8080", Help: "public listener (demo: 127.0.0.1:8080); failing to bind it stops start-up", Doc: "public listener; failing to bind it stops start-up", DocDef: "`:8080`; `127.0.0.1:8080` in the demo"},
		{Env: "EDGE_PUBLIC_URL", Flag: "public-url", Def: "", Help: "the URL partners call, e.g. https://api.aurora.example.com: the docs URL is it + EDGE_DOCS_PATH; required outside the demo unless EDGE_DOCS_URL is set", Doc: "the URL partners call (e.g. `https://api.aurora.example.com`); the docs URL is it + `EDGE_DOCS_PATH`, so every problem `type` and `documentationUrl` opens on the edge itself; outside the demo start-up fails naming both when neither it nor `EDGE_DOCS_URL` is set", DocDef: "required outside the demo unless `EDGE_DOCS_URL` is set; the demo takes none (its own URL)"},
		{Env: "EDGE_ADMIN_ADDR", Flag: "admin-addr", Def: "127.0.0.1:9090", Help: "metrics and pprof listener; empty (or \"off\") disables it; failing to bind it stops start-up", EmptySet: true, Doc: "metrics (`/metrics`), profiling (`/debug/pprof/`), Redis state (`/fleet`) and shadow comparison (`/shadow`) listener; empty disables it (`off` too); failing to bind it stops start-up"},
		{Env: "EDGE_BRAND", Flag: "brand", Def: "", Help: "brand this deployment serves (demo: aurora)", Doc: "the brand this deployment serves; required outside the demo", DocDef: "empty; `aurora` in the demo"},
		{Env: "EDGE_DOCS_URL", Flag: "docs-url", Def: "", Help: "documentation base: problem type prefix and documentationUrl (default: EDGE_PUBLIC_URL + EDGE_DOCS_PATH)", Doc: "`docs_url`: problem `type` base and `documentationUrl`, where the documentation site is published when not by the edge itself", DocDef: "`EDGE_PUBLIC_URL` + `EDGE_DOCS_PATH`"},
		{Env: "EDGE_KEYS_FILE", Flag: "keys-file", Def: "", Help: "API key file (demo: generated demo keys)", Doc: "the [key file]({docs}operations.md#the-key-file); required outside the demo", DocDef: "empty; the demo mints its own keys and takes no key file"},
		{Env: "EDGE_CODE_SOURCE", Flag: "code-source", Def: "none", Doc: "`none`, `short_code` or `legacy_property_code`"},
		{Env: "EDGE_CACHE_TTL", Flag: "cache-ttl", Def: "30s", Doc: "how long PMS data is served without asking again: the edge walks the PMS this long after each walk ended, whether partners call or not; `0` disables caching (each read asks the PMS, and the events feed's walks run every `30s`)"},
		{Env: "EDGE_CACHE_STALE", Flag: "cache-stale", Def: "5m", Doc: "how old data may be when served because the PMS is failing (at least `EDGE_CACHE_TTL`)"},
		{Env: "EDGE_EVENTS_RETENTION", Flag: "events-retention", Def: "168h", Help: "how long property change events are kept for GET /v1/events; an older after is 410", Doc: "how long property change events are kept for `GET /v1/events`; an `after` older than what is kept is `410 EVENTS_CURSOR_EXPIRED` (a single edge keeps them in memory and, with `EDGE_DATA_DIR`, on disk across restarts; a fleet in Redis: see [events]({docs}operations.md#property-change-events))"},
		{Env: "EDGE_EVENTS_MAX", Flag: "events-max", Def: "1000000", Help: "at most this many property change events kept per PMS, the oldest dropped first", Doc: "at most this many property change events kept per PMS (live, sandbox), the oldest dropped first; each takes about 550 bytes of memory on every instance, so `EDGE_EVENTS_MAX_BYTES` is the bound that binds first at the defaults"},
		{Env: "EDGE_EVENTS_MAX_BYTES", Flag: "events-max-bytes", Def: "64MiB", Help: "at most this much memory (bytes, or with a unit) of property change events held per PMS, the oldest dropped first", Doc: "at most this much memory of property change events held per PMS (plain bytes, or `64MiB`, `1GiB`...), beside `EDGE_EVENTS_MAX` and `EDGE_EVENTS_RETENTION`, the oldest dropped first (a cursor before them is `410`); `EDGE_DATA_DIR`'s file holds what memory holds; the default fits the shipped manifest at 50,000 hotels: see [sizing]({docs}operations.md#sizing-the-feed)"},
		{Env: "EDGE_DATA_DIR", Flag: "data-dir", Def: "", Help: "directory where a single edge keeps its events feed across restarts (created 0700 if missing; empty: memory only)", Doc: "a directory where a single edge keeps its events feed and the last walk's properties across restarts (`events.db`, mode `0600`; created `0700` if missing), written once per walk in one transaction: cursors outlive a restart and changes made while the edge was down become events; one that is not a directory or not writable, or that another edge holds, stops start-up naming it; a fleet keeps its feed in Redis and only checks it; the image and the shipped manifests set it on a volume; see [events]({docs}operations.md#property-change-events)", DocDef: "empty: the feed in memory only (a fleet: Redis); the image: `/var/lib/partner-edge`"},
		{Env: "EDGE_LIST_HOLD", Flag: "list-hold", Def: "15m", Help: "how long a replaced snapshot stays held for list pages pinned to it with asOf; later: 410", Doc: "how long the snapshot of an earlier walk stays held, after a newer one replaced it, for list pages pinned to it with `asOf`; later `asOf` is `410 LIST_SNAPSHOT_EXPIRED` (the partner lists again). Held snapshots share unchanged properties with the current one; when together they would cost more than the current one, the oldest goes early (see [listings]({docs}operations.md#listings-pinned-to-a-snapshot))"},
		{Env: "EDGE_WEBHOOK_ALLOW_CIDRS", Flag: "webhook-allow-cidrs", Def: "", Help: "comma-separated CIDRs webhook deliveries may connect to although inside the network (loopback, private...); for test setups", Doc: "comma-separated CIDRs (`127.0.0.0/8`, `10.1.2.0/24`, `fd00::/8`) webhook deliveries may connect to although the edge refuses them otherwise (loopback, private, link-local, CGNAT... see [webhooks.md]({docs}webhooks.md#no-delivery-reaches-inside)); an IPv4 range allows its IPv4-mapped form too; for test setups and the demo, never a production need; a value that is not a CIDR stops start-up naming it", DocDef: "empty: every inside range refused; the demo allows `127.0.0.0/8`"},
		{Env: "EDGE_WEBHOOK_ALLOW_HTTP", Flag: "webhook-allow-http", Def: "false", Help: "true: webhook deliveries may go to http:// URLs (test setups); false: https only", Doc: "`true`: webhook deliveries may go to `http://` URLs (a receiver on a test machine); `false`: `https` only, verified against the system's roots", DocDef: "`false`; `true` in the demo"},
		{Env: "EDGE_TLS_CERT", Flag: "tls-cert", Def: "", Help: "TLS certificate file (HTTPS and HTTP/2 when set with the key)", Doc: "TLS certificate file: with `EDGE_TLS_KEY`, serve HTTPS (HTTP/2 on); reloaded on change and on SIGHUP"},
		{Env: "EDGE_TLS_KEY", Flag: "tls-key", Def: "", Doc: "TLS private key file (with `EDGE_TLS_CERT`)"},
		{Env: "PMS_BASE_URL", Flag: "pms-base-url", Def: "", Help: "live PMS base URL (empty: the demo's embedded simulator)", Doc: "live PMS; setting it leaves the demo (no query or fragment); left empty while any other `EDGE_*` or `PMS_*` setting than `EDGE_ADDR`, `EDGE_ADMIN_ADDR`, `EDGE_DATA_DIR`, `EDGE_LOG_*`, `EDGE_ACCESS_LOG*` and `EDGE_TRACE_*` is set, start-up fails naming it and the setting found", DocDef: "empty: the embedded simulator (demo)"},
		{Env: "PMS_SANDBOX_URL", Flag: "pms-sandbox-url", Def: "", Help: "sandbox PMS for svc_test_ keys (empty: test keys refused)", Doc: "sandbox PMS for `svc_test_` keys; empty: test keys get `403 TEST_MODE_UNAVAILABLE`"},
		{Env: "PMS_TOKEN", Flag: "pms-token", Def: "", Doc: "bearer token the edge presents to the PMS (prefer the variable: flags show in `ps`)"},
		{Env: "EDGE_REQUEST_TIMEOUT", Flag: "request-timeout", Def: "10s", Doc: "overall deadline of one request; PMS calls and retries fit inside it"},
		{Env: "EDGE_PMS_TIMEOUT", Flag: "pms-timeout", Def: "9s", Help: "deadline of one PMS get, retries included (at most EDGE_REQUEST_TIMEOUT); a walk has EDGE_PMS_WALK_TIMEOUT", Doc: "deadline of one PMS get (and, with `EDGE_CACHE_TTL=0`, of the walk a request makes for itself), retries included; never more than `EDGE_REQUEST_TIMEOUT` (a larger value is cut to it); a walk of the list has its own budget, `EDGE_PMS_WALK_TIMEOUT`"},
		{Env: "EDGE_PMS_ATTEMPT_TIMEOUT", Flag: "pms-attempt-timeout", Def: "4s", Doc: "deadline of one HTTP attempt to the PMS"},
		{Env: "EDGE_PMS_WALK_TIMEOUT", Flag: "pms-walk-timeout", Def: "10m", Help: "budget of one walk of the brand's list (first load, refresh, fleet lease, candidate); each page still under EDGE_PMS_ATTEMPT_TIMEOUT", Doc: "budget of one walk of the brand's list (first load, refresh, fleet lease, shadow candidate, `edge pms check`): a background load, not bounded by `EDGE_PMS_TIMEOUT`; each page still under `EDGE_PMS_ATTEMPT_TIMEOUT` with its retries; a walk takes about hotels / 100 x the PMS's time per page (see [scaling.md]({docs}scaling.md#a-brand-behind-a-pms-of-real-speed))"},
		{Env: "EDGE_MAX_CONCURRENT", Flag: "max-concurrent", Def: "1024", Help: "requests in progress beyond which the edge answers 503 with Retry-After: 1 (health excepted); 0 disables the cap", Doc: "requests in progress beyond which the edge sheds with `503` and `Retry-After: 1` (health never shed); `0` disables the cap; see [capacity]({docs}operations.md#shedding-and-capacity)"},
		{Env: "EDGE_DRAIN_DELAY", Flag: "drain-delay", Def: "0s", Doc: "on SIGTERM, keep serving this long with health at `503` so load balancers drain, before closing the listener"},
		{Env: "EDGE_SHUTDOWN_TIMEOUT", Flag: "shutdown-timeout", Def: "15s", Doc: "after the drain delay, bound on waiting for requests in flight"},
		{Env: "EDGE_RATE_LIMIT", Flag: "rate-limit", Def: "0", Help: "requests per second allowed to each key (429 beyond); 0 disables limiting", Doc: "the default per-key quota in requests per second (`429` with `Retry-After` beyond); a key's own `rateLimit` in the key file overrides it and applies even when this is `0`; `0`: off; a rate a limiter cannot represent (e.g. `1e-9`) is a start-up error"},
		{Env: "EDGE_RATE_BURST", Flag: "rate-burst", Def: "0", Doc: "requests a key may make at once under the default quota; `0`: the rate rounded up"},
		{Env: "EDGE_AUTH_FAIL_LIMIT", Flag: "auth-fail-limit", Def: "20", Help: "failed authentications (401 INVALID_API_KEY) allowed per client address per minute before 429; 0 disables the throttle", Doc: "failed authentications (`401 INVALID_API_KEY`, `INVALID_ACCESS_TOKEN`, `ACCESS_TOKEN_EXPIRED`, and a token's `503` when no signing key could be had) allowed per client address per minute before `429` with `Retry-After`, refused before any key is looked at; `0` disables the throttle"},
		{Env: "EDGE_TRUSTED_PROXIES", Flag: "trusted-proxies", Def: "", Help: "comma-separated CIDRs whose X-Forwarded-For is believed for the client address", Doc: "comma-separated CIDRs whose `X-Forwarded-For` is believed for the client address (logs, traces, throttle); otherwise the TCP peer is the client; ranges wider than /8 (IPv4) or /16 (IPv6) are refused"},
		{Env: "EDGE_REDIS_URL", Flag: "redis-url", Def: "", Help: "redis:// or rediss:// URL of the one Redis (or Valkey) primary that instances share limits and snapshot loads through; empty keeps everything in-process", Doc: "`redis://host:port/db` (or `rediss://`) of one primary: per-key limits, failed-auth throttling and snapshot loads shared by every instance naming the same Redis; see [scaling.md]({docs}scaling.md)", DocDef: "empty: all state in-process"},
		{Env: "EDGE_REDIS_SENTINELS", Flag: "redis-sentinels", Def: "", Doc: "comma-separated `host:port` of Sentinels: a Sentinel-managed primary instead of `EDGE_REDIS_URL`, with `EDGE_REDIS_MASTER`; see [scaling.md]({docs}scaling.md#redis-forms-and-failover)"},
		{Env: "EDGE_REDIS_MASTER", Flag: "redis-master", Def: "", Doc: "the name of the primary the Sentinels monitor; required with `EDGE_REDIS_SENTINELS`"},
		{Env: "EDGE_REDIS_SENTINEL_PASSWORD", Flag: "redis-sentinel-password", Def: "", Doc: "the Sentinels' own password, if they require one (never echoed; prefer the variable: flags show in `ps`)"},
		{Env: "EDGE_REDIS_CLUSTER", Flag: "redis-cluster", Def: "", Doc: "comma-separated `host:port` seed nodes of a Redis Cluster instead of `EDGE_REDIS_URL`; keys one script touches share a hash tag"},
		{Env: "EDGE_REDIS_USERNAME", Flag: "redis-username", Def: "", Doc: "ACL user of the Sentinel and Cluster forms (or of an `EDGE_REDIS_URL` without credentials); empty: the default user"},
		{Env: "EDGE_REDIS_PASSWORD", Flag: "redis-password", Def: "", Help: "ACL password for the Sentinel and Cluster forms (prefer the variable: flags show in ps)", Doc: "its password (never echoed; prefer the variable: flags show in `ps`)"},
		{Env: "EDGE_REDIS_TLS", Flag: "redis-tls", Def: "false", Doc: "`true`: TLS for the Sentinel and Cluster forms (`EDGE_REDIS_URL` says it with `rediss://`)"},
		{Env: "EDGE_REDIS_CA_FILE", Flag: "redis-ca-file", Def: "", Help: "PEM bundle of the CAs trusted for Redis TLS instead of the system store", Doc: "PEM bundle of the CAs trusted for Redis TLS instead of the system store (a private CA; the process's store and `SSL_CERT_FILE` stay as they are); an operator file (regular, at most 1 MiB)", DocDef: "empty: the system store"},
		{Env: "EDGE_REDIS_CERT_FILE", Flag: "redis-cert-file", Def: "", Doc: "client certificate (PEM) presented to Redis over TLS, with `EDGE_REDIS_KEY_FILE` (both or neither)"},
		{Env: "EDGE_REDIS_KEY_FILE", Flag: "redis-key-file", Def: "", Doc: "the client certificate's private key (PEM)"},
		{Env: "EDGE_DOCS_PATH", Flag: "docs-path", Def: "/docs", Help: "serve the documentation site at this path; off (or empty) turns it off", EmptySet: true, Doc: "serve the [documentation site]({docs}docsite.md) at this path (unauthenticated, cacheable, outside `/v1`); `off` (or empty) turns it off, and then `EDGE_DOCS_URL` must say where the site is published", DocDef: "`/docs`; `off` disables"},
		{Env: "EDGE_DOCS_CONTACT", Flag: "docs-contact", Def: "", Help: "the contact the documentation site and the served OpenAPI document show: an https URL or an e-mail address (empty: none)", Doc: "the contact URL or e-mail address the documentation site and the served OpenAPI document (`info.contact`) show", DocDef: "empty: no contact shown"},
		{Env: "EDGE_FLEET_SECRET", Flag: "fleet-secret", Def: "", Help: "at least 32 bytes, the same on every instance; required with any Redis (EDGE_REDIS_URL, _SENTINELS or _CLUSTER): authenticates what instances share through Redis (prefer the variable: flags show in ps)", Doc: "at least 32 bytes, the same on every instance: authenticates (HMAC-SHA256) what instances share through Redis; start-up fails naming it when a Redis is named (`EDGE_REDIS_URL`, `EDGE_REDIS_SENTINELS` or `EDGE_REDIS_CLUSTER`) without it (prefer the variable: flags show in `ps`)", DocDef: "empty; required with any Redis"},
		{Env: "EDGE_PMS_MAX_WALK_BYTES", Flag: "pms-max-walk-bytes", Def: "256MiB", Help: "bound on the total size of one PMS list walk (bytes, or with a unit: 64MiB, 1GiB); beyond it the walk fails (502)", Doc: "bound on the total size of one PMS list walk, and on what the edge keeps of it (plain bytes, or `64MiB`, `1GiB`, `10MB`...); beyond it the walk fails (`502`, logged); a walk holds at most this plus about two pages (see [resilience.md]({docs}resilience.md)); `edge pms check` walks under it too"},
		{Env: "EDGE_OAUTH_ISSUER", Flag: "oauth-issuer", Def: "", Help: "OAuth 2.0 authorization server's issuer URL; with EDGE_OAUTH_AUDIENCE turns access tokens on (empty: off)", Doc: "the authorization server's issuer URL (compared exactly with `iss`); with `EDGE_OAUTH_AUDIENCE` (both or neither) OAuth 2.0 access tokens are accepted beside API keys; see [oauth.md]({docs}oauth.md)", DocDef: "empty (tokens off)"},
		{Env: "EDGE_OAUTH_AUDIENCE", Flag: "oauth-audience", Def: "", Doc: "this deployment's resource identifier (e.g. `https://api.aurora.example.com/v1`), in every token's `aud`; with `EDGE_OAUTH_ISSUER` (both or neither)", DocDef: "empty (tokens off)"},
		{Env: "EDGE_OAUTH_JWKS_HOSTS", Flag: "oauth-jwks-hosts", Def: "", Help: "comma-separated hosts besides the issuer's that its jwks_uri may name", Doc: "comma-separated hosts (names or IP addresses, no port) besides the issuer's own that its `jwks_uri` may name; a `jwks_uri` elsewhere, or a redirect of a key fetch to another origin, is refused (logged)", DocDef: "empty: the issuer's host only"},
		{Env: "PMS_CANDIDATE_URL", Flag: "pms-candidate-url", Def: "", Help: "candidate PMS walked in the background and compared with the live one (GET /shadow on the admin listener); never serves a partner", Doc: "a candidate PMS walked in the background at most once per `EDGE_CACHE_TTL`, right after the edge's own walk of the live PMS, and compared with it (`GET /shadow` on the admin listener, `partner_edge_shadow_*` metrics); it never serves a partner; see [pms-changes.md]({docs}pms-changes.md)"},
		{Env: "PMS_CANDIDATE_TOKEN", Flag: "pms-candidate-token", Def: "", Doc: "bearer token the edge presents to the candidate PMS (prefer the variable: flags show in `ps`)"},
		{Env: "PMS_CANDIDATE_MAX_WALK_BYTES", Flag: "pms-candidate-max-walk-bytes", Def: "64MiB", Help: "bound on one walk of the candidate PMS, on what it sends and what the edge keeps of it (bytes, or with a unit); beyond it the walk fails and /shadow says walk_over_bound", Doc: "bound on one walk of the candidate PMS: on the bytes it sends and on what the edge keeps of them (plain bytes, or `16MiB`, `1GiB`...); beyond it the walk stops, partners are not affected, and `/shadow` says `walk_over_bound`; the candidate's walk is also paced (16 MiB/s, at low priority) so that it takes little CPU from partners, and its deadline stretched to match; `edge pms check --candidate` walks under it too"},
		{Env: "EDGE_LOG_FORMAT", Flag: "log-format", Def: "json", Doc: "`json` or `text`"},
		{Env: "EDGE_LOG_LEVEL", Flag: "log-level", Def: "info", Doc: "`debug`, `info`, `warn` or `error`"},
		{Env: "EDGE_ACCESS_LOG", Flag: "access-log", Def: "stdout", Help: "where the access log goes (buffered, flushed every second): stdout, stderr, off, or a file path (appended to); the other logs go to stderr", Doc: "where the access log goes: `stdout`, `stderr`, `off` or a file path (appended to); buffered (64 KiB, flushed every second and at exit); lines the output cannot take are dropped and counted (`partner_edge_log_dropped_total`), never waited for; the other logs stay on stderr"},
		{Env: "EDGE_TRACE_SLOW", Flag: "trace-slow", Def: "1s", Help: "a request slower than this keeps its whole trace whatever the sampler, as 5xx answers do, within EDGE_TRACE_KEEP_RATE; off disables", Doc: "a request slower than this keeps its whole trace whatever the sampler (`OTEL_TRACES_SAMPLER`), as a `5xx` answer does, both within `EDGE_TRACE_KEEP_RATE`; see [observability.md]({docs}observability.md#sampling)", DocDef: "`1s`; `off` disables"},
		{Env: "EDGE_TRACE_KEEP_RATE", Flag: "trace-keep-rate", Def: "100", Help: "at most this many traces a second are kept for their outcome (5xx first, then slow); the others are counted (partner_edge_traces_unkept_total); 0: no bound", Doc: "at most this many traces a second (and as many at once) are kept for their outcome, `5xx` answers first, then slow ones; beyond it a sample is kept and the rest counted (`partner_edge_traces_unkept_total{reason}`); see [observability.md]({docs}observability.md#sampling)", DocDef: "`100`; `0`: no bound"},
		{Env: "EDGE_ACCESS_LOG_SAMPLE", Flag: "access-log-sample", Def: "1", Doc: "fraction (above 0, at most 1) of successful requests' access lines written; 4xx and 5xx lines are always written"},
	}
}

// parseSettings resolves every setting of the edge. --help prints the
// table and returns flag.ErrHelp. Errors name the variable (or flag) and
// the value; every error is reported, not only the first.
func parseSettings(args []string, getenv lookupEnv, stderr io.Writer) (settings, error) {
	p, rest, err := settingval.Line{Name: "edge", Usage: commandsUsage}.Parse(settingTable(), args, getenv, stderr)
	if err != nil {
		return settings{}, err
	}
	if err := settingval.NoArgs(rest); err != nil {
		return settings{}, err
	}
	return edgeSettings(p)
}

// edgeSettings converts and checks every setting of the edge.
func edgeSettings(p *settingval.Parser) (settings, error) {
	s := readSettings(p)
	checkBounds(p, &s)
	resolveDocsURL(p, &s)
	checkTogether(p, &s)
	checkDemo(p, s)
	// A PMS call never outlives the request that waits for it: the call
	// deadline is bounded by the request deadline (a shared cache load,
	// detached from any one request, uses the call deadline).
	s.PMSTimeout = min(s.PMSTimeout, s.RequestTimeout)
	return s, p.Err()
}

// readSettings converts every setting of the edge.
func readSettings(p *settingval.Parser) settings {
	s := settings{
		Addr:                  p.Str("EDGE_ADDR"),
		AdminAddr:             p.Str("EDGE_ADMIN_ADDR"),
		Brand:                 p.Str("EDGE_BRAND"),
		DocsURL:               settingval.Read(p, "EDGE_DOCS_URL", settingval.DocsURL),
		PublicURL:             settingval.Read(p, "EDGE_PUBLIC_URL", settingval.PublicURL),
		DocsContact:           settingval.Read(p, "EDGE_DOCS_CONTACT", docsite.ParseContact),
		KeysFile:              p.Str("EDGE_KEYS_FILE"),
		CodeSource:            settingval.Read(p, "EDGE_CODE_SOURCE", mapping.ParseCodeSource),
		CacheTTL:              settingval.Read(p, "EDGE_CACHE_TTL", settingval.Duration),
		CacheStale:            settingval.Read(p, "EDGE_CACHE_STALE", settingval.Duration),
		TLSCert:               p.Str("EDGE_TLS_CERT"),
		TLSKey:                p.Str("EDGE_TLS_KEY"),
		PMSBaseURL:            settingval.Read(p, "PMS_BASE_URL", settingval.BaseURL),
		PMSSandbox:            settingval.Read(p, "PMS_SANDBOX_URL", settingval.BaseURL),
		PMSToken:              p.Str("PMS_TOKEN"),
		PMSTimeout:            settingval.Read(p, "EDGE_PMS_TIMEOUT", settingval.Duration),
		PMSAttempt:            settingval.Read(p, "EDGE_PMS_ATTEMPT_TIMEOUT", settingval.Duration),
		PMSWalkTimeout:        settingval.Read(p, "EDGE_PMS_WALK_TIMEOUT", settingval.Duration),
		DrainDelay:            settingval.Read(p, "EDGE_DRAIN_DELAY", settingval.Duration),
		ShutdownWait:          settingval.Read(p, "EDGE_SHUTDOWN_TIMEOUT", settingval.Duration),
		LogFormat:             settingval.Read(p, "EDGE_LOG_FORMAT", settingval.OneOf("json", "text")),
		LogLevel:              settingval.Read(p, "EDGE_LOG_LEVEL", settingval.Level),
		RatePerSecond:         settingval.Read(p, "EDGE_RATE_LIMIT", settingval.Float),
		RateBurst:             settingval.Read(p, "EDGE_RATE_BURST", settingval.Count),
		RequestTimeout:        settingval.Read(p, "EDGE_REQUEST_TIMEOUT", settingval.Duration),
		MaxConcurrent:         settingval.Read(p, "EDGE_MAX_CONCURRENT", settingval.Count),
		AuthFailLimit:         settingval.Read(p, "EDGE_AUTH_FAIL_LIMIT", settingval.Count),
		TrustedProxies:        settingval.Read(p, "EDGE_TRUSTED_PROXIES", edge.ParseTrustedProxies),
		Redis:                 readRedis(p),
		OAuthIssuer:           settingval.Read(p, "EDGE_OAUTH_ISSUER", settingval.ExactURL),
		OAuthAudience:         settingval.Read(p, "EDGE_OAUTH_AUDIENCE", settingval.ExactURL),
		OAuthJWKSHosts:        settingval.Read(p, "EDGE_OAUTH_JWKS_HOSTS", oauth.ParseHosts),
		CandidateURL:          settingval.Read(p, "PMS_CANDIDATE_URL", settingval.BaseURL),
		CandidateToken:        p.Str("PMS_CANDIDATE_TOKEN"),
		CandidateMaxWalkBytes: settingval.Read(p, "PMS_CANDIDATE_MAX_WALK_BYTES", settingval.Size),
		FleetSecret:           []byte(p.Str("EDGE_FLEET_SECRET")),
		PMSMaxWalkBytes:       settingval.Read(p, "EDGE_PMS_MAX_WALK_BYTES", settingval.Size),
		DocsPath:              settingval.Read(p, "EDGE_DOCS_PATH", settingval.DocsPath),
		AddrSet:               p.Get("EDGE_ADDR").Set,

		AccessLog:       p.Str("EDGE_ACCESS_LOG"),
		AccessLogSample: settingval.Read(p, "EDGE_ACCESS_LOG_SAMPLE", settingval.Float),
		TraceSlow:       settingval.Read(p, "EDGE_TRACE_SLOW", settingval.OffDuration),
		TraceKeepRate:   settingval.Read(p, "EDGE_TRACE_KEEP_RATE", settingval.Count),
		EventsRetention: settingval.Read(p, "EDGE_EVENTS_RETENTION", settingval.Duration),
		EventsMax:       settingval.Read(p, "EDGE_EVENTS_MAX", settingval.Count),
		EventsMaxBytes:  settingval.Read(p, "EDGE_EVENTS_MAX_BYTES", settingval.Size),
		DataDir:         p.Str("EDGE_DATA_DIR"),
		ListHold:        settingval.Read(p, "EDGE_LIST_HOLD", settingval.Duration),

		WebhookAllow:     settingval.Read(p, "EDGE_WEBHOOK_ALLOW_CIDRS", webhooks.ParseAllow),
		WebhookAllowHTTP: settingval.Read(p, "EDGE_WEBHOOK_ALLOW_HTTP", settingval.Bool),
	}
	if s.AdminAddr == "off" {
		s.AdminAddr = ""
	}
	return s
}

// checkTogether adds the rules between settings to the errors, each that
// is broken (not only the first). A rule about a value already refused
// (read) is not checked: one mistake is one error.
func checkTogether(p *settingval.Parser, s *settings) {
	read := func(envs ...string) bool {
		return !slices.ContainsFunc(envs, p.Refused)
	}
	for _, r := range []struct {
		broken bool
		err    error
	}{
		{(s.TLSCert == "") != (s.TLSKey == ""), errors.New("EDGE_TLS_CERT and EDGE_TLS_KEY must be set together")},
		{s.PMSBaseURL != "" && s.KeysFile == "", errors.New("EDGE_KEYS_FILE is required when PMS_BASE_URL is set")},
		{s.PMSBaseURL != "" && s.Brand == "", errors.New("EDGE_BRAND is required when PMS_BASE_URL is set")},
		{s.PMSSandbox != "" && s.PMSBaseURL == "", errors.New("PMS_SANDBOX_URL needs PMS_BASE_URL (the demo embeds both)")},
		{read("EDGE_PMS_TIMEOUT", "EDGE_PMS_ATTEMPT_TIMEOUT") && (s.PMSTimeout <= 0 || s.PMSAttempt <= 0), errors.New("EDGE_PMS_TIMEOUT and EDGE_PMS_ATTEMPT_TIMEOUT must be positive")},
		{read("EDGE_PMS_WALK_TIMEOUT") && s.PMSWalkTimeout <= 0, errors.New("EDGE_PMS_WALK_TIMEOUT must be positive")},
		{read("EDGE_REQUEST_TIMEOUT") && s.RequestTimeout <= 0, errors.New("EDGE_REQUEST_TIMEOUT must be positive")},
		{read("EDGE_ACCESS_LOG_SAMPLE") && (s.AccessLogSample <= 0 || s.AccessLogSample > 1), fmt.Errorf("invalid EDGE_ACCESS_LOG_SAMPLE %v: want a fraction above 0 and at most 1", s.AccessLogSample)},
		{s.OAuthIssuer != "" && s.OAuthAudience == "", errors.New("EDGE_OAUTH_AUDIENCE is required when EDGE_OAUTH_ISSUER is set (docs/contract.md section 12: both or neither)")},
		{s.OAuthAudience != "" && s.OAuthIssuer == "", errors.New("EDGE_OAUTH_ISSUER is required when EDGE_OAUTH_AUDIENCE is set (docs/contract.md section 12: both or neither)")},
		{read("EDGE_CACHE_STALE", "EDGE_CACHE_TTL") && s.CacheStale < s.CacheTTL, fmt.Errorf("EDGE_CACHE_STALE (%s) must be at least EDGE_CACHE_TTL (%s)", s.CacheStale, s.CacheTTL)},
		{read("EDGE_EVENTS_RETENTION") && s.EventsRetention <= 0, errors.New("EDGE_EVENTS_RETENTION must be positive")},
		{read("EDGE_EVENTS_MAX") && s.EventsMax < 1, errors.New("EDGE_EVENTS_MAX must be at least 1")},
		{read("EDGE_LIST_HOLD") && s.ListHold <= 0, errors.New("EDGE_LIST_HOLD must be positive")},
	} {
		if r.broken {
			p.Fail(r.err)
		}
	}
}

// demoSetting reports whether env may be set in the demo (PMS_BASE_URL
// empty): its listeners, logs and traces (docs/contract.md section 22),
// and EDGE_DATA_DIR, which the image sets (section 25): the demo keeps
// its feed there too. Any other setting belongs to a deployment, and setting it while
// PMS_BASE_URL is empty is a mistake, most often a misspelt or forgotten
// PMS_BASE_URL, that would otherwise serve the simulator's hotels with
// minted keys where a deployment was meant.
func demoSetting(env string) bool {
	switch env {
	case "PMS_BASE_URL", "EDGE_ADDR", "EDGE_ADMIN_ADDR", "EDGE_DATA_DIR":
		return true
	}
	return strings.HasPrefix(env, "EDGE_LOG_") || strings.HasPrefix(env, "EDGE_ACCESS_LOG") || strings.HasPrefix(env, "EDGE_TRACE_")
}

// checkDemo refuses the demo when a setting other than its own is set (by
// its variable or its flag): the error names PMS_BASE_URL and each setting
// found.
func checkDemo(p *settingval.Parser, s settings) {
	if s.PMSBaseURL != "" || p.Get("PMS_BASE_URL").Value != "" {
		return
	}
	for _, st := range settingTable() {
		if g := p.Get(st.Env); !demoSetting(st.Env) && g.Set {
			p.Fail(fmt.Errorf("%s is set but PMS_BASE_URL is not: the demo (no PMS_BASE_URL) takes only EDGE_ADDR, EDGE_ADMIN_ADDR, EDGE_DATA_DIR, EDGE_LOG_*, EDGE_ACCESS_LOG* and EDGE_TRACE_*; set PMS_BASE_URL to the live PMS, or unset %[1]s to run the demo", g.Source))
		}
	}
}

// redisURL reads empty (no Redis) or a redis:// or rediss:// URL of one
// host that go-redis can use (redisconn.CheckURL); a refused one is empty.
func redisURL(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if err := redisconn.CheckURL(v); err != nil {
		return "", err
	}
	return v, nil
}

// readRedis maps the EDGE_REDIS_* settings to the fleet's (docs/contract.md section 16) and
// adds the rules it breaks (two forms, a Sentinel without its master...)
// to the start-up errors; passwords are never echoed. The operator files
// are read when the edge joins the fleet (joinFleet).
func readRedis(p *settingval.Parser) redisconn.Settings {
	s := redisconn.Settings{
		URL:              settingval.Read(p, "EDGE_REDIS_URL", redisURL),
		Sentinels:        p.Str("EDGE_REDIS_SENTINELS"),
		Master:           p.Str("EDGE_REDIS_MASTER"),
		SentinelPassword: p.Str("EDGE_REDIS_SENTINEL_PASSWORD"),
		Cluster:          p.Str("EDGE_REDIS_CLUSTER"),
		Username:         p.Str("EDGE_REDIS_USERNAME"),
		Password:         p.Str("EDGE_REDIS_PASSWORD"),
		TLS:              settingval.Read(p, "EDGE_REDIS_TLS", settingval.Bool),
		CAFile:           p.Str("EDGE_REDIS_CA_FILE"),
		CertFile:         p.Str("EDGE_REDIS_CERT_FILE"),
		KeyFile:          p.Str("EDGE_REDIS_KEY_FILE"),
		ReadFile:         listener.ReadTLSFile,
	}
	check := s
	if p.Get("EDGE_REDIS_URL").Value != "" && s.URL == "" {
		check.URL = "redis://refused" // refused above, but still a form for the rules below
	}
	if err := check.Check(); err != nil {
		p.Fail(err)
	}
	return s
}

// minFleetSecret is the shortest EDGE_FLEET_SECRET taken (docs/contract.md section 15):
// an HMAC-SHA256 key of at least the hash's own size.
const minFleetSecret = 32

// maxRate is the fastest rate a limiter can represent: the Redis limiter
// counts in emission intervals of at least a microsecond.
const maxRate = 1e6

// checkBounds refuses what would not be enforced as configured
// (docs/contract.md section 15): a default quota the limiter cannot represent (it would
// mean no limit at all), and a fleet in Redis without a secret to
// authenticate what it shares.
func checkBounds(p *settingval.Parser, s *settings) {
	if s.RatePerSecond > 0 {
		burst := s.RateBurst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(min(s.RatePerSecond, maxRate))))
		}
		if l := (ratelimit.Limit{PerSecond: s.RatePerSecond, Burst: burst}); !l.Valid() || s.RatePerSecond > maxRate {
			st := p.Get("EDGE_RATE_LIMIT")
			p.Bad(st, fmt.Sprintf("a limiter cannot represent this rate with burst %d: want 0 (off) or more than %g and at most %g requests a second",
				burst, ratelimit.MinRate(burst), float64(maxRate)))
		}
	}
	if s.Redis.Configured() && len(s.FleetSecret) < minFleetSecret {
		src := p.Get("EDGE_FLEET_SECRET").Source
		if len(s.FleetSecret) == 0 {
			p.Fail(fmt.Errorf("%s is required when %s is set: a random secret of at least %d bytes shared by every instance (docs/contract.md section 15)", src, s.Redis.Variable(), minFleetSecret))
		} else {
			p.Fail(fmt.Errorf("%s is too short (%d bytes): want at least %d bytes", src, len(s.FleetSecret), minFleetSecret))
		}
	}
}
