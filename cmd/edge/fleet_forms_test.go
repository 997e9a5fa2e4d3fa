package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// fleetState is what an edge's /fleet says.
type fleetState struct {
	Redis   string   `json:"redis"`
	Form    string   `json:"form"`
	Master  string   `json:"master"`
	Nodes   []string `json:"nodes"`
	Breaker string   `json:"breaker"`
	Shared  bool     `json:"shared"`
}

func getFleet(t *testing.T, admin string) fleetState {
	t.Helper()
	res, err := http.Get(admin + "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st fleetState
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatalf("/fleet: %v", err)
	}
	return st
}

// docs/contract.md section 16, failover is routine: three edge processes on a
// Sentinel-managed Redis (one primary, one replica, three Sentinels) under
// steady load; the primary is killed (SIGKILL). Sentinel promotes the
// replica, every instance shares again within 10 s of the promotion and
// /fleet names the new primary; no partner answer is a 5xx meanwhile.
func TestFleetFollowsSentinelFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and runs eight processes for about 20 s")
	}
	bin := buildEdge(t)
	sentinel := redistest.StartSentinel(t)
	limited, open, keyFile := fleetKeys(t)
	pms := newWalkCountingPMS(t)
	edges := startFleetWith(t, bin, 3, keyFile, pms.srv.URL,
		"EDGE_REDIS_SENTINELS="+strings.Join(sentinel.Sentinels, ","), "EDGE_REDIS_MASTER="+redistest.SentinelMaster)

	following := func(primary string) bool { // outside event: each process's /fleet
		for _, e := range edges {
			st := getFleet(t, e.admin)
			if !st.Shared || !slices.Equal(st.Nodes, []string{primary}) {
				return false
			}
		}
		return true
	}
	load := startLoad(edges, limited, open)
	defer load.stop()
	old := sentinel.Primary()
	testkit.Eventually(t, "every instance shares through the first primary", func() bool { return following(old) })
	st := getFleet(t, edges[0].admin)
	if st.Form != "sentinel" || st.Master != redistest.SentinelMaster {
		t.Errorf("/fleet %+v; want form sentinel, master %s", st, redistest.SentinelMaster)
	}

	sentinel.KillPrimary()
	killed := time.Now()
	var promoted time.Time
	var primary string
	deadline := killed.Add(40 * time.Second)
	for {
		if promoted.IsZero() {
			if p := sentinel.Primary(); p != old {
				promoted, primary = time.Now(), p
			}
		}
		if !promoted.IsZero() && following(primary) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("40 s after the kill: promoted %v (%s), instances not all following: %+v", !promoted.IsZero(), primary, getFleet(t, edges[0].admin))
		}
		time.Sleep(50 * time.Millisecond) // outside events: the Sentinels' and the processes' state
	}
	followed := time.Now()
	time.Sleep(time.Second) // traffic on the new primary, for the answers' check
	load.stop()
	counts := load.snapshot()
	t.Logf("primary %s killed; Sentinel promoted %s after %s; all three instances shared through it %s after the promotion (%s after the kill); %d answers",
		old, primary, promoted.Sub(killed).Round(10*time.Millisecond), followed.Sub(promoted).Round(10*time.Millisecond),
		followed.Sub(killed).Round(10*time.Millisecond), counts.total)
	if d := followed.Sub(promoted); d > 10*time.Second {
		t.Errorf("instances followed the promotion after %s; want within 10 s", d)
	}
	if len(counts.bad) > 0 {
		t.Errorf("answers other than 200 (and 429 of the limited key) during the failover: %v", counts.bad)
	}
	if counts.total < 100 {
		t.Errorf("only %d answers: the load did not run", counts.total)
	}
}

// docs/contract.md section 16, TLS: an edge reaches a TLS-only Redis whose certificate a
// private CA signed through EDGE_REDIS_CA_FILE, with a client certificate
// and an ACL user, and shares through it; an edge given another CA starts
// with a clear warning and serves from its in-process fallback; one given
// a wrong password logs the refusal without the password.
func TestEdgeRedisTLSAndACL(t *testing.T) {
	const pw = "pw-of-the-edge-user-7"
	srv := redistest.StartTLS(t, redistest.TLSOptions{ClientCerts: true, NoDefaultUser: true,
		Users: []redistest.User{{Name: "edge", Password: pw}}})
	other := redistest.NewCA(t, t.TempDir(), "other")
	keyFile, token := keystest.Live(t, "aurora")
	pms := newWalkCountingPMS(t)
	env := func(ca, password string) map[string]string {
		return map[string]string{
			"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
			"EDGE_KEYS_FILE": keyFile, "PMS_BASE_URL": pms.srv.URL, "PMS_TOKEN": "pms-secret-token", "EDGE_DOCS_URL": testDocsURL,
			"EDGE_REDIS_URL": srv.URL(), "EDGE_REDIS_CA_FILE": ca,
			"EDGE_REDIS_CERT_FILE": srv.ClientCert, "EDGE_REDIS_KEY_FILE": srv.ClientKey,
			"EDGE_REDIS_USERNAME": "edge", "EDGE_REDIS_PASSWORD": password, "EDGE_FLEET_SECRET": testFleetSecret,
		}
	}
	for _, tc := range []struct {
		name, ca, password string
		shared             bool
		logged             string
	}{
		{"private CA", srv.CA.File, pw, true, "redis answers: joined the fleet"},
		{"wrong CA", other.File, pw, false, "redis TLS certificate not trusted (check EDGE_REDIS_CA_FILE)"},
		{"wrong password", srv.CA.File, "not-" + pw, false, "WRONGPASS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, env(tc.ca, tc.password))
			base := "http://" + waitListening(t, s) + "/v1/"
			waitHealthy(t, base)
			admin := waitAdmin(t, s.stderr)
			for i := range 5 { // partners are served whatever Redis does
				if code := call(t, base+"properties?perPage=5", token); code != http.StatusOK {
					t.Fatalf("request %d: %d; want 200", i, code)
				}
			}
			if tc.shared {
				// Outside event: the member joins at start, or, where a busy
				// machine made the start-up ping miss its second, at its first
				// probe after (both logged as the join).
				testkit.Eventually(t, "/fleet says shared through "+srv.Addr, func() bool {
					st := getFleet(t, admin)
					return st.Shared && st.Form == "primary" && slices.Equal(st.Nodes, []string{srv.Addr})
				})
			}
			if !tc.shared {
				// Outside event: the process's breaker, opened by its failed calls.
				testkit.Eventually(t, "/fleet says the fallback is in use", func() bool {
					_ = call(t, base+"properties?perPage=5", token)
					return !getFleet(t, admin).Shared
				})
			}
			testkit.Eventually(t, "the log says "+tc.logged, func() bool { return strings.Contains(s.stderr.String(), tc.logged) })
			if strings.Contains(s.stderr.String(), pw) {
				t.Errorf("the log shows the password")
			}
		})
	}
}
