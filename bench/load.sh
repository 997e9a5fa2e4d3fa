#!/usr/bin/env bash
# bench/load.sh: the edge's cached list against a bare net/http server
# writing the same bytes, driven by wrk over loopback, in one run so that the
# ratio means something on a shared machine. See bench/README.md.
#
#   bench/load.sh            baseline, then the edge (cached)
#   MISS=1 bench/load.sh     and then the edge with EDGE_CACHE_TTL=0 (every
#                            request walks the PMS simulator)
#
# Settings (environment): DURATION (10s), THREADS (2), CONNS (50),
# EDGE_PORT (18080), BASE_PORT (18081), MISS_PORT (18082), SIM_PORT (18083), MISS (0),
# LOG_LEVEL (warn: the edge's EDGE_LOG_LEVEL). OTEL_* variables pass through
# to the edge as set (none set: spans are made but not exported).
set -euo pipefail

DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-50}
EDGE_PORT=${EDGE_PORT:-18080}
BASE_PORT=${BASE_PORT:-18081}
MISS_PORT=${MISS_PORT:-18082}
SIM_PORT=${SIM_PORT:-18083}
MISS=${MISS:-0}
LOG_LEVEL=${LOG_LEVEL:-warn}
TARGET=/v1/properties?perPage=50

cd "$(dirname "$0")/.."

if ! command -v wrk >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "wrk not found: installing the Debian package wrk" >&2
		apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
	else
		echo "wrk not found: install it (Debian/Ubuntu: sudo apt-get install wrk; macOS: brew install wrk)" >&2
		exit 1
	fi
fi

work=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

echo "building cmd/edge, cmd/pmsim and bench/baseline" >&2
go build -o "$work/edge" ./cmd/edge
go build -o "$work/pmsim" ./cmd/pmsim
go build -o "$work/baseline" ./bench/baseline

# wait_for URL: until it answers at all (any status), for up to 10 s.
wait_for() {
	for _ in $(seq 100); do
		if curl -s -o /dev/null "$1"; then return 0; fi
		sleep 0.1
	done
	echo "no answer from $1" >&2
	return 1
}

# The PMS simulator with the demo's data (seed 1) and a key file of one
# live key. Not the demo itself: the demo takes no setting but its
# listeners and logs (docs/operations.md), and these runs set
# EDGE_CACHE_TTL. env -u: EDGE_PORT is this script's setting, not the
# edge's, which refuses every EDGE_* variable it does not read.
"$work/pmsim" --addr "127.0.0.1:$SIM_PORT" --seed 1 >"$work/pmsim.out" 2>&1 &
pids+=($!)
key=$(env -u EDGE_PORT "$work/edge" keys add --file "$work/keys.json" --brand aurora --mode live --json 2>/dev/null |
	sed -n 's/.*"key": *"\([^"]*\)".*/\1/p')
if [ -z "$key" ]; then
	echo "edge keys add printed no key" >&2
	exit 1
fi

# start_edge PORT TTL NAME: the edge on loopback against the simulator. The
# access log is at warn by default (no line for a 200): at info every
# request writes a JSON line, which measures the log sink as much as the
# edge (LOG_LEVEL=info to see it).
start_edge() {
	env -u EDGE_PORT EDGE_ADDR=127.0.0.1:$1 EDGE_ADMIN_ADDR=off EDGE_LOG_LEVEL=$LOG_LEVEL EDGE_CACHE_TTL=$2 \
		PMS_BASE_URL=http://127.0.0.1:$SIM_PORT EDGE_BRAND=aurora EDGE_KEYS_FILE="$work/keys.json" \
		EDGE_PUBLIC_URL=http://127.0.0.1:$1 "$work/edge" >"$work/$3.out" 2>"$work/$3.err" &
	pids+=($!)
	wait_for "http://127.0.0.1:$1/v1/health"
}

# drive NAME URL [AUTH]: one wrk run; its output is kept for the summary.
drive() {
	local name=$1 url=$2 auth=${3:-}
	local args=(-t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -H 'User-Agent: partner-edge-bench/1.0')
	if [ -n "$auth" ]; then args+=(-H "Authorization: Bearer $auth"); fi
	echo "== $name: wrk ${args[*]/Bearer */Bearer <key>} $url" >&2
	wrk "${args[@]}" "$url" | tee "$work/$name.wrk" >&2
	if grep -q 'Non-2xx' "$work/$name.wrk"; then
		echo "$name: non-2xx answers; the figures are not comparable" >&2
		exit 1
	fi
}

rps() { awk '/^Requests\/sec:/ {print $2}' "$work/$1.wrk"; }
lat() { awk -v p="$2" '$1 == p {print $2}' "$work/$1.wrk"; }

start_edge "$EDGE_PORT" 30s edge
live_key=$key
# The baseline answers exactly the bytes the edge answers for the same request.
curl -sf -o "$work/body.json" -H "Authorization: Bearer $live_key" -H 'User-Agent: partner-edge-bench/1.0' \
	"http://127.0.0.1:$EDGE_PORT$TARGET"
"$work/baseline" --addr "127.0.0.1:$BASE_PORT" --body "$work/body.json" >"$work/baseline.out" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$BASE_PORT/"

drive baseline "http://127.0.0.1:$BASE_PORT$TARGET"
drive cached "http://127.0.0.1:$EDGE_PORT$TARGET" "$live_key"
runs=(baseline cached)
if [ "$MISS" = 1 ]; then
	start_edge "$MISS_PORT" 0 miss
	drive miss "http://127.0.0.1:$MISS_PORT$TARGET" "$key"
	runs+=(miss)
fi

base=$(rps baseline)
echo
echo "load.sh $(date -u +%Y-%m-%dT%H:%M:%SZ): GET $TARGET, $(wc -c <"$work/body.json") bytes, wrk -t$THREADS -c$CONNS -d$DURATION, $(nproc) CPUs, edge log level $LOG_LEVEL"
printf '%-9s %12s %9s %9s %9s %9s %14s\n' run req/s p50 p90 p99 max "req/s ratio"
for r in "${runs[@]}"; do
	max=$(awk '/^ +Latency/ {print $4}' "$work/$r.wrk")
	printf '%-9s %12s %9s %9s %9s %9s %14s\n' "$r" "$(rps "$r")" "$(lat "$r" 50%)" "$(lat "$r" 90%)" \
		"$(lat "$r" 99%)" "$max" "$(awk -v a="$(rps "$r")" -v b="$base" 'BEGIN {printf "%.3f", a / b}')"
done
