package main

import (
	"errors"
	"flag"
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
	CandidateMaxWalkBytes    int64         // bound of one candidate walk (docs/contract.md section 17)
	TraceSlow                time.Duration // a slower request keeps its trace (docs/observability.md); 0: off
	TraceKeepRate            int           // traces kept by outcome a second (docs/observability.md); 0: no bound
	EventsRetention          time.Duration // how long property change events are kept (docs/contract.md section 23)
	EventsMax                int           // at most this many events kept per PMS
}

// offDuration reads a positive duration, or "off" (0).
func offDuration(v string) (time.Duration, error) {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration such as 1s, or off")
	}
	return d, nil
}

// lookupEnv reads one environment variable and says whether it is set at
// all, as os.LookupEnv does: an empty value is not an absent one.
type lookupEnv = func(string) (string, bool)

// setting is one row of the table: variable, flag, default, help. The
// table is the one place a setting is declared: `edge --help` prints it and
// `go generate ./cmd/edge` writes the settings table of docs/operations.md
// from it (settings_docs_test.go).
type setting struct {
	env, flag, def, help string
	// doc is the row's markdown meaning in the generated table; empty:
	// help. In it, {docs} stands for the path to docs/ from the file
	// (docs/operations.md: empty). docDef is the
	// markdown default shown there; empty: def in backquotes, or "empty"
	// when def is "".
	doc, docDef string
	// emptySet: a variable set to the empty string means the empty value
	// (EDGE_ADMIN_ADDR= disables the admin listener). Otherwise an empty
	// variable means the default, as an unset one does.
	emptySet bool
}

func settingTable() []*setting {
	return []*setting{
		{env: "EDGE_ADDR", flag: "addr", def: ":8080", help: "public listener (demo: 127.0.0.1:8080); failing to bind it stops start-up", doc: "public listener; failing to bind it stops start-up", docDef: "`:8080`; `127.0.0.1:8080` in the demo"},
		{env: "EDGE_PUBLIC_URL", flag: "public-url", def: "", help: "the URL partners call, e.g. https://api.aurora.example.com: the docs URL is it + EDGE_DOCS_PATH; required outside the demo unless EDGE_DOCS_URL is set", doc: "the URL partners call (e.g. `https://api.aurora.example.com`); the docs URL is it + `EDGE_DOCS_PATH`, so every problem `type` and `documentationUrl` opens on the edge itself; outside the demo start-up fails naming both when neither it nor `EDGE_DOCS_URL` is set", docDef: "required outside the demo unless `EDGE_DOCS_URL` is set; the demo takes none (its own URL)"},
		{env: "EDGE_ADMIN_ADDR", flag: "admin-addr", def: "127.0.0.1:9090", help: "metrics and pprof listener; empty (or \"off\") disables it; failing to bind it stops start-up", emptySet: true, doc: "metrics (`/metrics`), profiling (`/debug/pprof/`), Redis state (`/fleet`) and shadow comparison (`/shadow`) listener; empty disables it (`off` too); failing to bind it stops start-up"},
		{env: "EDGE_BRAND", flag: "brand", def: "", help: "brand this deployment serves (demo: aurora)", doc: "the brand this deployment serves; required outside the demo", docDef: "empty; `aurora` in the demo"},
		{env: "EDGE_DOCS_URL", flag: "docs-url", def: "", help: "documentation base: problem type prefix and documentationUrl (default: EDGE_PUBLIC_URL + EDGE_DOCS_PATH)", doc: "`docs_url`: problem `type` base and `documentationUrl`, where the documentation site is published when not by the edge itself", docDef: "`EDGE_PUBLIC_URL` + `EDGE_DOCS_PATH`"},
		{env: "EDGE_KEYS_FILE", flag: "keys-file", def: "", help: "API key file (demo: generated demo keys)", doc: "the [key file]({docs}operations.md#the-key-file); required outside the demo", docDef: "empty; the demo mints its own keys and takes no key file"},
		{env: "EDGE_CODE_SOURCE", flag: "code-source", def: "none", help: "source of the public code: none, short_code or legacy_property_code", doc: "`none`, `short_code` or `legacy_property_code`"},
		{env: "EDGE_CACHE_TTL", flag: "cache-ttl", def: "30s", help: "how long PMS data is served without asking again; 0 disables caching", doc: "how long PMS data is served without asking again; `0` disables caching"},
		{env: "EDGE_CACHE_STALE", flag: "cache-stale", def: "5m", help: "how old data may be when served because the PMS is failing", doc: "how old data may be when served because the PMS is failing (at least `EDGE_CACHE_TTL`)"},
		{env: "EDGE_EVENTS_RETENTION", flag: "events-retention", def: "168h", help: "how long property change events are kept for GET /v1/events; an older after is 410", doc: "how long property change events are kept for `GET /v1/events`; an `after` older than what is kept is `410 EVENTS_CURSOR_EXPIRED` (a single edge keeps them in memory, forgotten on restart; a fleet in Redis: see [events]({docs}operations.md#property-change-events))"},
		{env: "EDGE_EVENTS_MAX", flag: "events-max", def: "1000000", help: "at most this many property change events kept per PMS, the oldest dropped first", doc: "at most this many property change events kept per PMS (live, sandbox), the oldest dropped first; each costs about 400 bytes of memory on every instance"},
		{env: "EDGE_TLS_CERT", flag: "tls-cert", def: "", help: "TLS certificate file (HTTPS and HTTP/2 when set with the key)", doc: "TLS certificate file: with `EDGE_TLS_KEY`, serve HTTPS (HTTP/2 on); reloaded on change and on SIGHUP"},
		{env: "EDGE_TLS_KEY", flag: "tls-key", def: "", help: "TLS private key file", doc: "TLS private key file (with `EDGE_TLS_CERT`)"},
		{env: "PMS_BASE_URL", flag: "pms-base-url", def: "", help: "live PMS base URL (empty: the demo's embedded simulator)", doc: "live PMS; setting it leaves the demo (no query or fragment); left empty while any other `EDGE_*` or `PMS_*` setting than `EDGE_ADDR`, `EDGE_ADMIN_ADDR`, `EDGE_LOG_*`, `EDGE_ACCESS_LOG*` and `EDGE_TRACE_*` is set, start-up fails naming it and the setting found", docDef: "empty: the embedded simulator (demo)"},
		{env: "PMS_SANDBOX_URL", flag: "pms-sandbox-url", def: "", help: "sandbox PMS for svc_test_ keys (empty: test keys refused)", doc: "sandbox PMS for `svc_test_` keys; empty: test keys get `403 TEST_MODE_UNAVAILABLE`"},
		{env: "PMS_TOKEN", flag: "pms-token", def: "", help: "bearer token the edge presents to the PMS (prefer the variable: flags show in ps)", doc: "bearer token the edge presents to the PMS (prefer the variable: flags show in `ps`)"},
		{env: "EDGE_REQUEST_TIMEOUT", flag: "request-timeout", def: "10s", help: "overall deadline of one request; PMS calls and retries fit inside it"},
		{env: "EDGE_PMS_TIMEOUT", flag: "pms-timeout", def: "9s", help: "deadline of one PMS get, retries included (at most EDGE_REQUEST_TIMEOUT); a walk has EDGE_PMS_WALK_TIMEOUT", doc: "deadline of one PMS get (and, with `EDGE_CACHE_TTL=0`, of the walk a request makes for itself), retries included; never more than `EDGE_REQUEST_TIMEOUT` (a larger value is cut to it); a walk of the list has its own budget, `EDGE_PMS_WALK_TIMEOUT`"},
		{env: "EDGE_PMS_ATTEMPT_TIMEOUT", flag: "pms-attempt-timeout", def: "4s", help: "deadline of one PMS attempt", doc: "deadline of one HTTP attempt to the PMS"},
		{env: "EDGE_PMS_WALK_TIMEOUT", flag: "pms-walk-timeout", def: "10m", help: "budget of one walk of the brand's list (first load, refresh, fleet lease, candidate); each page still under EDGE_PMS_ATTEMPT_TIMEOUT", doc: "budget of one walk of the brand's list (first load, refresh, fleet lease, shadow candidate, `edge pms check`): a background load, not bounded by `EDGE_PMS_TIMEOUT`; each page still under `EDGE_PMS_ATTEMPT_TIMEOUT` with its retries; a walk takes about hotels / 100 x the PMS's time per page (see [scaling.md]({docs}scaling.md#a-brand-behind-a-pms-of-real-speed))"},
		{env: "EDGE_MAX_CONCURRENT", flag: "max-concurrent", def: "1024", help: "requests in progress beyond which the edge answers 503 with Retry-After: 1 (health excepted); 0 disables the cap", doc: "requests in progress beyond which the edge sheds with `503` and `Retry-After: 1` (health never shed); `0` disables the cap; see [capacity]({docs}operations.md#shedding-and-capacity)"},
		{env: "EDGE_DRAIN_DELAY", flag: "drain-delay", def: "0s", help: "on shutdown, serve this long with health 503 before closing", doc: "on SIGTERM, keep serving this long with health at `503` so load balancers drain, before closing the listener"},
		{env: "EDGE_SHUTDOWN_TIMEOUT", flag: "shutdown-timeout", def: "15s", help: "bound on waiting for in-flight requests at shutdown", doc: "after the drain delay, bound on waiting for requests in flight"},
		{env: "EDGE_RATE_LIMIT", flag: "rate-limit", def: "0", help: "requests per second allowed to each key (429 beyond); 0 disables limiting", doc: "the default per-key quota in requests per second (`429` with `Retry-After` beyond); a key's own `rateLimit` in the key file overrides it and applies even when this is `0`; `0`: off; a rate a limiter cannot represent (e.g. `1e-9`) is a start-up error"},
		{env: "EDGE_RATE_BURST", flag: "rate-burst", def: "0", help: "requests a key may make at once; 0 means the rate rounded up", doc: "requests a key may make at once under the default quota; `0`: the rate rounded up"},
		{env: "EDGE_AUTH_FAIL_LIMIT", flag: "auth-fail-limit", def: "20", help: "failed authentications (401 INVALID_API_KEY) allowed per client address per minute before 429; 0 disables the throttle", doc: "failed authentications (`401 INVALID_API_KEY`, `INVALID_ACCESS_TOKEN`, `ACCESS_TOKEN_EXPIRED`, and a token's `503` when no signing key could be had) allowed per client address per minute before `429` with `Retry-After`, refused before any key is looked at; `0` disables the throttle"},
		{env: "EDGE_TRUSTED_PROXIES", flag: "trusted-proxies", def: "", help: "comma-separated CIDRs whose X-Forwarded-For is believed for the client address", doc: "comma-separated CIDRs whose `X-Forwarded-For` is believed for the client address (logs, traces, throttle); otherwise the TCP peer is the client; ranges wider than /8 (IPv4) or /16 (IPv6) are refused"},
		{env: "EDGE_REDIS_URL", flag: "redis-url", def: "", help: "redis:// or rediss:// URL of the one Redis (or Valkey) primary that instances share limits and snapshot loads through; empty keeps everything in-process", doc: "`redis://host:port/db` (or `rediss://`) of one primary: per-key limits, failed-auth throttling and snapshot loads shared by every instance naming the same Redis; see [scaling.md]({docs}scaling.md)", docDef: "empty: all state in-process"},
		{env: "EDGE_REDIS_SENTINELS", flag: "redis-sentinels", def: "", help: "comma-separated host:port of the Sentinels of a Sentinel-managed Redis, instead of EDGE_REDIS_URL (with EDGE_REDIS_MASTER)", doc: "comma-separated `host:port` of Sentinels: a Sentinel-managed primary instead of `EDGE_REDIS_URL`, with `EDGE_REDIS_MASTER`; see [scaling.md]({docs}scaling.md#redis-forms-and-failover)"},
		{env: "EDGE_REDIS_MASTER", flag: "redis-master", def: "", help: "name of the primary the Sentinels monitor (required with EDGE_REDIS_SENTINELS)", doc: "the name of the primary the Sentinels monitor; required with `EDGE_REDIS_SENTINELS`"},
		{env: "EDGE_REDIS_SENTINEL_PASSWORD", flag: "redis-sentinel-password", def: "", help: "the Sentinels' own password, if they have one (prefer the variable: flags show in ps)", doc: "the Sentinels' own password, if they require one (never echoed; prefer the variable: flags show in `ps`)"},
		{env: "EDGE_REDIS_CLUSTER", flag: "redis-cluster", def: "", help: "comma-separated host:port seed nodes of a Redis Cluster, instead of EDGE_REDIS_URL", doc: "comma-separated `host:port` seed nodes of a Redis Cluster instead of `EDGE_REDIS_URL`; keys one script touches share a hash tag"},
		{env: "EDGE_REDIS_USERNAME", flag: "redis-username", def: "", help: "ACL user for the Sentinel and Cluster forms (or a URL without credentials)", doc: "ACL user of the Sentinel and Cluster forms (or of an `EDGE_REDIS_URL` without credentials); empty: the default user"},
		{env: "EDGE_REDIS_PASSWORD", flag: "redis-password", def: "", help: "ACL password for the Sentinel and Cluster forms (prefer the variable: flags show in ps)", doc: "its password (never echoed; prefer the variable: flags show in `ps`)"},
		{env: "EDGE_REDIS_TLS", flag: "redis-tls", def: "false", help: "true: TLS to the Sentinels and Redis, or to the Cluster's nodes (EDGE_REDIS_URL says it with rediss://)", doc: "`true`: TLS for the Sentinel and Cluster forms (`EDGE_REDIS_URL` says it with `rediss://`)"},
		{env: "EDGE_REDIS_CA_FILE", flag: "redis-ca-file", def: "", help: "PEM bundle of the CAs trusted for Redis TLS instead of the system store", doc: "PEM bundle of the CAs trusted for Redis TLS instead of the system store (a private CA; the process's store and `SSL_CERT_FILE` stay as they are); an operator file (regular, at most 1 MiB)", docDef: "empty: the system store"},
		{env: "EDGE_REDIS_CERT_FILE", flag: "redis-cert-file", def: "", help: "client certificate (PEM) presented to Redis over TLS, with EDGE_REDIS_KEY_FILE", doc: "client certificate (PEM) presented to Redis over TLS, with `EDGE_REDIS_KEY_FILE` (both or neither)"},
		{env: "EDGE_REDIS_KEY_FILE", flag: "redis-key-file", def: "", help: "the client certificate's private key (PEM)", doc: "the client certificate's private key (PEM)"},
		{env: "EDGE_DOCS_PATH", flag: "docs-path", def: "/docs", help: "serve the documentation site at this path; off (or empty) turns it off", emptySet: true, doc: "serve the [documentation site]({docs}docsite.md) at this path (unauthenticated, cacheable, outside `/v1`); `off` (or empty) turns it off, and then `EDGE_DOCS_URL` must say where the site is published", docDef: "`/docs`; `off` disables"},
		{env: "EDGE_DOCS_CONTACT", flag: "docs-contact", def: "", help: "the contact the documentation site and the served OpenAPI document show: an https URL or an e-mail address (empty: none)", doc: "the contact URL or e-mail address the documentation site and the served OpenAPI document (`info.contact`) show", docDef: "empty: no contact shown"},
		{env: "EDGE_FLEET_SECRET", flag: "fleet-secret", def: "", help: "at least 32 bytes, the same on every instance; required with any Redis (EDGE_REDIS_URL, _SENTINELS or _CLUSTER): authenticates what instances share through Redis (prefer the variable: flags show in ps)", doc: "at least 32 bytes, the same on every instance: authenticates (HMAC-SHA256) what instances share through Redis; start-up fails naming it when a Redis is named (`EDGE_REDIS_URL`, `EDGE_REDIS_SENTINELS` or `EDGE_REDIS_CLUSTER`) without it (prefer the variable: flags show in `ps`)", docDef: "empty; required with any Redis"},
		{env: "EDGE_PMS_MAX_WALK_BYTES", flag: "pms-max-walk-bytes", def: "256MiB", help: "bound on the total size of one PMS list walk (bytes, or with a unit: 64MiB, 1GiB); beyond it the walk fails (502)", doc: "bound on the total size of one PMS list walk, and on what the edge keeps of it (plain bytes, or `64MiB`, `1GiB`, `10MB`...); beyond it the walk fails (`502`, logged); a walk holds at most this plus about two pages (see [resilience.md]({docs}resilience.md)); `edge pms check` walks under it too"},
		{env: "EDGE_OAUTH_ISSUER", flag: "oauth-issuer", def: "", help: "OAuth 2.0 authorization server's issuer URL; with EDGE_OAUTH_AUDIENCE turns access tokens on (empty: off)", doc: "the authorization server's issuer URL (compared exactly with `iss`); with `EDGE_OAUTH_AUDIENCE` (both or neither) OAuth 2.0 access tokens are accepted beside API keys; see [oauth.md]({docs}oauth.md)", docDef: "empty (tokens off)"},
		{env: "EDGE_OAUTH_AUDIENCE", flag: "oauth-audience", def: "", help: "this deployment's resource identifier (e.g. https://api.aurora.example.com/v1); tokens must name it in aud", doc: "this deployment's resource identifier (e.g. `https://api.aurora.example.com/v1`), in every token's `aud`; with `EDGE_OAUTH_ISSUER` (both or neither)", docDef: "empty (tokens off)"},
		{env: "EDGE_OAUTH_JWKS_HOSTS", flag: "oauth-jwks-hosts", def: "", help: "comma-separated hosts besides the issuer's that its jwks_uri may name", doc: "comma-separated hosts (names or IP addresses, no port) besides the issuer's own that its `jwks_uri` may name; a `jwks_uri` elsewhere, or a redirect of a key fetch to another origin, is refused (logged)", docDef: "empty: the issuer's host only"},
		{env: "PMS_CANDIDATE_URL", flag: "pms-candidate-url", def: "", help: "candidate PMS walked in the background and compared with the live one (GET /shadow on the admin listener); never serves a partner", doc: "a candidate PMS walked in the background at most once per `EDGE_CACHE_TTL`, right after the edge's own walk of the live PMS, and compared with it (`GET /shadow` on the admin listener, `partner_edge_shadow_*` metrics); it never serves a partner; see [pms-changes.md]({docs}pms-changes.md)"},
		{env: "PMS_CANDIDATE_TOKEN", flag: "pms-candidate-token", def: "", help: "bearer token the edge presents to the candidate PMS (prefer the variable: flags show in ps)", doc: "bearer token the edge presents to the candidate PMS (prefer the variable: flags show in `ps`)"},
		{env: "PMS_CANDIDATE_MAX_WALK_BYTES", flag: "pms-candidate-max-walk-bytes", def: "64MiB", help: "bound on one walk of the candidate PMS, on what it sends and what the edge keeps of it (bytes, or with a unit); beyond it the walk fails and /shadow says walk_over_bound", doc: "bound on one walk of the candidate PMS: on the bytes it sends and on what the edge keeps of them (plain bytes, or `16MiB`, `1GiB`...); beyond it the walk stops, partners are not affected, and `/shadow` says `walk_over_bound`; the candidate's walk is also paced (16 MiB/s, at low priority) so that it takes little CPU from partners, and its deadline stretched to match; `edge pms check --candidate` walks under it too"},
		{env: "EDGE_LOG_FORMAT", flag: "log-format", def: "json", help: "log format: json or text", doc: "`json` or `text`"},
		{env: "EDGE_LOG_LEVEL", flag: "log-level", def: "info", help: "log level: debug, info, warn or error", doc: "`debug`, `info`, `warn` or `error`"},
		{env: "EDGE_ACCESS_LOG", flag: "access-log", def: "stdout", help: "where the access log goes (buffered, flushed every second): stdout, stderr, off, or a file path (appended to); the other logs go to stderr", doc: "where the access log goes: `stdout`, `stderr`, `off` or a file path (appended to); buffered (64 KiB, flushed every second and at exit); lines the output cannot take are dropped and counted (`partner_edge_log_dropped_total`), never waited for; the other logs stay on stderr"},
		{env: "EDGE_TRACE_SLOW", flag: "trace-slow", def: "1s", help: "a request slower than this keeps its whole trace whatever the sampler, as 5xx answers do, within EDGE_TRACE_KEEP_RATE; off disables", doc: "a request slower than this keeps its whole trace whatever the sampler (`OTEL_TRACES_SAMPLER`), as a `5xx` answer does, both within `EDGE_TRACE_KEEP_RATE`; see [observability.md]({docs}observability.md#sampling)", docDef: "`1s`; `off` disables"},
		{env: "EDGE_TRACE_KEEP_RATE", flag: "trace-keep-rate", def: "100", help: "at most this many traces a second are kept for their outcome (5xx first, then slow); the others are counted (partner_edge_traces_unkept_total); 0: no bound", doc: "at most this many traces a second (and as many at once) are kept for their outcome, `5xx` answers first, then slow ones; beyond it a sample is kept and the rest counted (`partner_edge_traces_unkept_total{reason}`); see [observability.md]({docs}observability.md#sampling)", docDef: "`100`; `0`: no bound"},
		{env: "EDGE_ACCESS_LOG_SAMPLE", flag: "access-log-sample", def: "1", help: "fraction (0 to 1] of successful requests' access-log lines written; 4xx and 5xx are always written", doc: "fraction (above 0, at most 1) of successful requests' access lines written; 4xx and 5xx lines are always written"},
	}
}

// cmdLine is one command's command line: the settings it reads (by
// variable; nil: every one), each a flag overriding its variable, and the
// command's own flags on top. Every command of the program (the edge,
// edge pms check, edge docs build) resolves its settings through it, so a
// variable means the same to each.
type cmdLine struct {
	name     string
	usage    []string               // printed by --help before the flags
	settings []string               // nil: every setting
	flags    func(fs *flag.FlagSet) // the command's own flags; nil: none
}

// got is a setting's resolved value.
type got struct {
	value  string
	source string // the variable, or "--flag" when the flag gave it: for messages
	set    bool   // given by the variable or the flag, not defaulted
}

// parse parses args and resolves the command's settings (resolve). --help
// prints the usage and returns flag.ErrHelp. It returns the parser of the
// resolved settings and the positional arguments.
func (c cmdLine) parse(args []string, getenv lookupEnv, stderr io.Writer) (*parser, []string, error) {
	rows := slices.DeleteFunc(settingTable(), func(st *setting) bool {
		return c.settings != nil && !slices.Contains(c.settings, st.env)
	})
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if c.flags != nil {
		c.flags(fs)
	}
	get, err := resolve(fs, c.usage, rows, args, getenv)
	return &parser{get: get}, fs.Args(), err
}

// resolve defines a string flag per row on fs, after the command's own
// flags (already defined), parses args and resolves every row by
// variable: the flag's value when given, else the variable's (an empty one
// is the default unless the row is emptySet), else the default. --help
// prints usage, the command's own flags, then the rows, and returns
// flag.ErrHelp.
func resolve(fs *flag.FlagSet, usage []string, rows []*setting, args []string, getenv lookupEnv) (map[string]got, error) {
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { own = append(own, f) })
	for _, st := range rows {
		fs.String(st.flag, "", st.help)
	}
	fs.Usage = func() { printUsage(fs.Output(), usage, own, rows) }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	get := make(map[string]got, len(rows))
	for _, st := range rows {
		g := got{value: st.def, source: st.env}
		if v, ok := getenv(st.env); ok && (v != "" || st.emptySet) {
			g.value, g.set = v, true
		}
		if given[st.flag] {
			g = got{fs.Lookup(st.flag).Value.String(), "--" + st.flag, true}
		}
		get[st.env] = g
	}
	return get, nil
}

// printUsage is --help: the usage lines, the command's own flags, then its
// settings.
func printUsage(w io.Writer, usage []string, own []*flag.Flag, rows []*setting) {
	for _, l := range usage {
		fmt.Fprintln(w, l)
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range own {
			fmt.Fprintf(w, "  --%s (default %q)\n        %s\n", f.Name, f.DefValue, f.Usage)
		}
	}
	fmt.Fprintln(w, "\nSettings (a flag overrides its environment variable):")
	for _, st := range rows {
		fmt.Fprintf(w, "  --%s, %s (default %q)\n        %s\n", st.flag, st.env, st.def, st.help)
	}
}

// noArgs refuses positional arguments.
func noArgs(rest []string) error {
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q (see --help)", rest[0])
	}
	return nil
}

// parseSettings resolves every setting of the edge. --help prints the
// table and returns flag.ErrHelp. Errors name the variable (or flag) and
// the value; every error is reported, not only the first.
func parseSettings(args []string, getenv lookupEnv, stderr io.Writer) (settings, error) {
	p, rest, err := cmdLine{name: "edge", usage: commandsUsage}.parse(args, getenv, stderr)
	if err != nil {
		return settings{}, err
	}
	if err := noArgs(rest); err != nil {
		return settings{}, err
	}
	return p.edgeSettings()
}

// edgeSettings converts and checks every setting of the edge.
func (p *parser) edgeSettings() (settings, error) {
	s := p.settings()
	p.checkBounds(&s)
	p.resolveDocsURL(&s)
	p.checkTogether(&s)
	p.checkDemo(s)
	// A PMS call never outlives the request that waits for it: the call
	// deadline is bounded by the request deadline (a shared cache load,
	// detached from any one request, uses the call deadline).
	s.PMSTimeout = min(s.PMSTimeout, s.RequestTimeout)
	return s, errors.Join(p.errs...)
}

// settings converts every setting of the edge.
func (p *parser) settings() settings {
	s := settings{
		Addr:                  p.str("EDGE_ADDR"),
		AdminAddr:             p.str("EDGE_ADMIN_ADDR"),
		Brand:                 p.str("EDGE_BRAND"),
		DocsURL:               read(p, "EDGE_DOCS_URL", settingval.DocsURL),
		PublicURL:             read(p, "EDGE_PUBLIC_URL", settingval.PublicURL),
		DocsContact:           read(p, "EDGE_DOCS_CONTACT", docsite.ParseContact),
		KeysFile:              p.str("EDGE_KEYS_FILE"),
		CodeSource:            read(p, "EDGE_CODE_SOURCE", mapping.ParseCodeSource),
		CacheTTL:              read(p, "EDGE_CACHE_TTL", settingval.Duration),
		CacheStale:            read(p, "EDGE_CACHE_STALE", settingval.Duration),
		TLSCert:               p.str("EDGE_TLS_CERT"),
		TLSKey:                p.str("EDGE_TLS_KEY"),
		PMSBaseURL:            read(p, "PMS_BASE_URL", settingval.BaseURL),
		PMSSandbox:            read(p, "PMS_SANDBOX_URL", settingval.BaseURL),
		PMSToken:              p.str("PMS_TOKEN"),
		PMSTimeout:            read(p, "EDGE_PMS_TIMEOUT", settingval.Duration),
		PMSAttempt:            read(p, "EDGE_PMS_ATTEMPT_TIMEOUT", settingval.Duration),
		PMSWalkTimeout:        read(p, "EDGE_PMS_WALK_TIMEOUT", settingval.Duration),
		DrainDelay:            read(p, "EDGE_DRAIN_DELAY", settingval.Duration),
		ShutdownWait:          read(p, "EDGE_SHUTDOWN_TIMEOUT", settingval.Duration),
		LogFormat:             read(p, "EDGE_LOG_FORMAT", settingval.OneOf("json", "text")),
		LogLevel:              read(p, "EDGE_LOG_LEVEL", settingval.Level),
		RatePerSecond:         read(p, "EDGE_RATE_LIMIT", settingval.Float),
		RateBurst:             read(p, "EDGE_RATE_BURST", settingval.Count),
		RequestTimeout:        read(p, "EDGE_REQUEST_TIMEOUT", settingval.Duration),
		MaxConcurrent:         read(p, "EDGE_MAX_CONCURRENT", settingval.Count),
		AuthFailLimit:         read(p, "EDGE_AUTH_FAIL_LIMIT", settingval.Count),
		TrustedProxies:        read(p, "EDGE_TRUSTED_PROXIES", edge.ParseTrustedProxies),
		Redis:                 p.redis(),
		OAuthIssuer:           read(p, "EDGE_OAUTH_ISSUER", settingval.ExactURL),
		OAuthAudience:         read(p, "EDGE_OAUTH_AUDIENCE", settingval.ExactURL),
		OAuthJWKSHosts:        read(p, "EDGE_OAUTH_JWKS_HOSTS", oauth.ParseHosts),
		CandidateURL:          read(p, "PMS_CANDIDATE_URL", settingval.BaseURL),
		CandidateToken:        p.str("PMS_CANDIDATE_TOKEN"),
		CandidateMaxWalkBytes: read(p, "PMS_CANDIDATE_MAX_WALK_BYTES", settingval.Size),
		FleetSecret:           p.secret("EDGE_FLEET_SECRET"),
		PMSMaxWalkBytes:       read(p, "EDGE_PMS_MAX_WALK_BYTES", settingval.Size),
		DocsPath:              read(p, "EDGE_DOCS_PATH", settingval.DocsPath),
		AddrSet:               p.get["EDGE_ADDR"].set,

		AccessLog:       p.str("EDGE_ACCESS_LOG"),
		AccessLogSample: read(p, "EDGE_ACCESS_LOG_SAMPLE", settingval.Float),
		TraceSlow:       read(p, "EDGE_TRACE_SLOW", offDuration),
		TraceKeepRate:   read(p, "EDGE_TRACE_KEEP_RATE", settingval.Count),
		EventsRetention: read(p, "EDGE_EVENTS_RETENTION", settingval.Duration),
		EventsMax:       read(p, "EDGE_EVENTS_MAX", settingval.Count),
	}
	if s.AdminAddr == "off" {
		s.AdminAddr = ""
	}
	return s
}

// checkTogether adds the rules between settings to the errors, each that
// is broken (not only the first).
func (p *parser) checkTogether(s *settings) {
	for _, r := range []struct {
		broken bool
		err    error
	}{
		{(s.TLSCert == "") != (s.TLSKey == ""), errors.New("EDGE_TLS_CERT and EDGE_TLS_KEY must be set together")},
		{s.PMSBaseURL != "" && s.KeysFile == "", errors.New("EDGE_KEYS_FILE is required when PMS_BASE_URL is set")},
		{s.PMSBaseURL != "" && s.Brand == "", errors.New("EDGE_BRAND is required when PMS_BASE_URL is set")},
		{s.PMSSandbox != "" && s.PMSBaseURL == "", errors.New("PMS_SANDBOX_URL needs PMS_BASE_URL (the demo embeds both)")},
		{s.PMSTimeout <= 0 || s.PMSAttempt <= 0, errors.New("EDGE_PMS_TIMEOUT and EDGE_PMS_ATTEMPT_TIMEOUT must be positive")},
		{s.PMSWalkTimeout <= 0, errors.New("EDGE_PMS_WALK_TIMEOUT must be positive")},
		{s.RequestTimeout <= 0, errors.New("EDGE_REQUEST_TIMEOUT must be positive")},
		{s.AccessLogSample <= 0 || s.AccessLogSample > 1, fmt.Errorf("invalid EDGE_ACCESS_LOG_SAMPLE %v: want a fraction above 0 and at most 1", s.AccessLogSample)},
		{s.OAuthIssuer != "" && s.OAuthAudience == "", errors.New("EDGE_OAUTH_AUDIENCE is required when EDGE_OAUTH_ISSUER is set (docs/contract.md section 12: both or neither)")},
		{s.OAuthAudience != "" && s.OAuthIssuer == "", errors.New("EDGE_OAUTH_ISSUER is required when EDGE_OAUTH_AUDIENCE is set (docs/contract.md section 12: both or neither)")},
		{s.CacheStale < s.CacheTTL, fmt.Errorf("EDGE_CACHE_STALE (%s) must be at least EDGE_CACHE_TTL (%s)", s.CacheStale, s.CacheTTL)},
		{s.EventsRetention <= 0, errors.New("EDGE_EVENTS_RETENTION must be positive")},
		{s.EventsMax < 1, errors.New("EDGE_EVENTS_MAX must be at least 1")},
	} {
		if r.broken {
			p.fail(r.err)
		}
	}
}

// demoSetting reports whether env may be set in the demo (PMS_BASE_URL
// empty): its listeners, logs and traces only (docs/contract.md section
// 22). Any other setting belongs to a deployment, and setting it while
// PMS_BASE_URL is empty is a mistake, most often a misspelt or forgotten
// PMS_BASE_URL, that would otherwise serve the simulator's hotels with
// minted keys where a deployment was meant.
func demoSetting(env string) bool {
	switch env {
	case "PMS_BASE_URL", "EDGE_ADDR", "EDGE_ADMIN_ADDR":
		return true
	}
	return strings.HasPrefix(env, "EDGE_LOG_") || strings.HasPrefix(env, "EDGE_ACCESS_LOG") || strings.HasPrefix(env, "EDGE_TRACE_")
}

// checkDemo refuses the demo when a setting other than its own is set (by
// its variable or its flag): the error names PMS_BASE_URL and each setting
// found.
func (p *parser) checkDemo(s settings) {
	if s.PMSBaseURL != "" || p.get["PMS_BASE_URL"].value != "" {
		return
	}
	for _, st := range settingTable() {
		if g := p.get[st.env]; !demoSetting(st.env) && g.set {
			p.fail(fmt.Errorf("%s is set but PMS_BASE_URL is not: the demo (no PMS_BASE_URL) takes only EDGE_ADDR, EDGE_ADMIN_ADDR, EDGE_LOG_*, EDGE_ACCESS_LOG* and EDGE_TRACE_*; set PMS_BASE_URL to the live PMS, or unset %[1]s to run the demo", g.source))
		}
	}
}

// parser converts settings, collecting every error.
type parser struct {
	get  map[string]got // by variable
	errs []error
}

func (p *parser) fail(err error) { p.errs = append(p.errs, err) }

// bad reports st's value as invalid; the value is shown redacted
// (settingval.Redact): no start-up error prints a secret.
func (p *parser) bad(st got, want string) {
	p.fail(fmt.Errorf("invalid %s %q: %s", st.source, settingval.Redact(st.value), want))
}

func (p *parser) str(env string) string { return p.get[env].value }

// read reads env's setting with conv (settingval's readers, or a
// package's own parser); a refused value is a start-up error naming the
// setting and the value, redacted.
func read[T any](p *parser, env string, conv func(string) (T, error)) T {
	st := p.get[env]
	v, err := conv(st.value)
	if err != nil {
		p.bad(st, err.Error())
	}
	return v
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

// redis maps the EDGE_REDIS_* settings to the fleet's (docs/contract.md section 16) and
// adds the rules it breaks (two forms, a Sentinel without its master...)
// to the start-up errors; passwords are never echoed. The operator files
// are read when the edge joins the fleet (joinFleet).
func (p *parser) redis() redisconn.Settings {
	s := redisconn.Settings{
		URL:              read(p, "EDGE_REDIS_URL", redisURL),
		Sentinels:        p.str("EDGE_REDIS_SENTINELS"),
		Master:           p.str("EDGE_REDIS_MASTER"),
		SentinelPassword: string(p.secret("EDGE_REDIS_SENTINEL_PASSWORD")),
		Cluster:          p.str("EDGE_REDIS_CLUSTER"),
		Username:         p.str("EDGE_REDIS_USERNAME"),
		Password:         string(p.secret("EDGE_REDIS_PASSWORD")),
		TLS:              read(p, "EDGE_REDIS_TLS", settingval.Bool),
		CAFile:           p.str("EDGE_REDIS_CA_FILE"),
		CertFile:         p.str("EDGE_REDIS_CERT_FILE"),
		KeyFile:          p.str("EDGE_REDIS_KEY_FILE"),
		ReadFile:         listener.ReadTLSFile,
	}
	check := s
	if p.get["EDGE_REDIS_URL"].value != "" && s.URL == "" {
		check.URL = "redis://refused" // refused above, but still a form for the rules below
	}
	if err := check.Check(); err != nil {
		p.fail(err)
	}
	return s
}

// minFleetSecret is the shortest EDGE_FLEET_SECRET taken (docs/contract.md section 15):
// an HMAC-SHA256 key of at least the hash's own size.
const minFleetSecret = 32

// maxRate is the fastest rate a limiter can represent: the Redis limiter
// counts in emission intervals of at least a microsecond.
const maxRate = 1e6

// secret reads a setting that is never echoed: errors name the variable
// only.
func (p *parser) secret(env string) []byte {
	return []byte(p.get[env].value)
}

// checkBounds refuses what would not be enforced as configured
// (docs/contract.md section 15): a default quota the limiter cannot represent (it would
// mean no limit at all), and a fleet in Redis without a secret to
// authenticate what it shares.
func (p *parser) checkBounds(s *settings) {
	if s.RatePerSecond > 0 {
		burst := s.RateBurst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(min(s.RatePerSecond, maxRate))))
		}
		if l := (ratelimit.Limit{PerSecond: s.RatePerSecond, Burst: burst}); !l.Valid() || s.RatePerSecond > maxRate {
			st := p.get["EDGE_RATE_LIMIT"]
			p.bad(st, fmt.Sprintf("a limiter cannot represent this rate with burst %d: want 0 (off) or more than %g and at most %g requests a second",
				burst, ratelimit.MinRate(burst), float64(maxRate)))
		}
	}
	if s.Redis.Configured() && len(s.FleetSecret) < minFleetSecret {
		src := p.get["EDGE_FLEET_SECRET"].source
		if len(s.FleetSecret) == 0 {
			p.fail(fmt.Errorf("%s is required when %s is set: a random secret of at least %d bytes shared by every instance (docs/contract.md section 15)", src, s.Redis.Variable(), minFleetSecret))
		} else {
			p.fail(fmt.Errorf("%s is too short (%d bytes): want at least %d bytes", src, len(s.FleetSecret), minFleetSecret))
		}
	}
}
