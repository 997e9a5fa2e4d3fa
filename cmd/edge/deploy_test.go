package main

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// runtimeEnv are variables read by the Go runtime or the OpenTelemetry SDK,
// not by run's settings table.
func runtimeEnv(name string) bool {
	return strings.HasPrefix(name, "OTEL_") || name == "POD_NAME" || name == "GOMEMLIMIT" || name == "GOMAXPROCS" || name == "GODEBUG"
}

type manifests struct {
	deploy  appsv1.Deployment
	svc     corev1.Service
	pdb     policyv1.PodDisruptionBudget
	hpa     autoscalingv2.HorizontalPodAutoscaler
	netpol  networkingv1.NetworkPolicy
	decoded []string
}

// decodeManifests decodes each document of docs/deploy/edge.yaml into its
// API type, refusing unknown or duplicate fields (sigs.k8s.io/yaml
// UnmarshalStrict), as `kubectl apply --validate=strict` would.
func decodeManifests(t *testing.T) manifests {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy", "edge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifests
	for i, doc := range bytes.Split(b, []byte("\n---\n")) {
		var head metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var into any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			into = &m.deploy
		case "v1 Service":
			into = &m.svc
		case "policy/v1 PodDisruptionBudget":
			into = &m.pdb
		case "autoscaling/v2 HorizontalPodAutoscaler":
			into = &m.hpa
		case "networking.k8s.io/v1 NetworkPolicy":
			into = &m.netpol
		default:
			t.Fatalf("document %d: unexpected %s %s", i, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("%s does not decode strictly: %v", head.Kind, err)
		}
		m.decoded = append(m.decoded, head.Kind)
	}
	slices.Sort(m.decoded)
	want := []string{"Deployment", "HorizontalPodAutoscaler", "NetworkPolicy", "PodDisruptionBudget", "Service"}
	if !slices.Equal(m.decoded, want) {
		t.Fatalf("documents %v, want one each of %v", m.decoded, want)
	}
	return m
}

// The strict decoder does refuse an unknown field: a misspelt one fails.
func TestDeployManifestsStrict(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 3\n")
	if err := yaml.UnmarshalStrict(doc, &appsv1.Deployment{}); err == nil {
		t.Fatal("a misspelt field decoded")
	}
}

// docs/operations.md, "Production kit": the manifests decode strictly into the Kubernetes
// API types; their probe path, ports, grace period and variable names are
// the code's: every variable is a row of settingTable (or the runtime's),
// and the Deployment's environment, with placeholder secrets, is a valid
// configuration for parseSettings.
func TestDeployManifests(t *testing.T) {
	m := decodeManifests(t)
	pod := m.deploy.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]

	// Variables: names from the settings table, values through its parser.
	known := map[string]bool{}
	for _, s := range settingTable() {
		known[s.Env] = true
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case known[e.Name] || runtimeEnv(e.Name):
		default:
			t.Errorf("env %s is no setting of cmd/edge", e.Name)
		}
		if e.Name == "POD_NAME" {
			// The downward API: service.instance.id is the pod's name.
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
				t.Errorf("POD_NAME is not the pod's metadata.name")
			}
			if !slices.ContainsFunc(c.Env, func(o corev1.EnvVar) bool {
				return o.Name == "OTEL_RESOURCE_ATTRIBUTES" && strings.Contains(o.Value, "service.instance.id=$(POD_NAME)")
			}) {
				t.Errorf("OTEL_RESOURCE_ATTRIBUTES does not set service.instance.id=$(POD_NAME)")
			}
			env[e.Name] = "edge-7d9f-abcde"
			continue
		}
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			if ref == nil || ref.Name == "" || ref.Key == "" {
				t.Errorf("env %s: valueFrom is not a Secret reference", e.Name)
			}
			env[e.Name] = placeholder(e.Name)
			continue
		}
		env[e.Name] = e.Value
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" }) {
		t.Errorf("no POD_NAME: service.instance.id is not the pod's name")
	}
	for _, secret := range []string{"PMS_TOKEN", "EDGE_REDIS_URL", "EDGE_FLEET_SECRET"} {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == secret && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}) {
			t.Errorf("%s is not taken from a Secret", secret)
		}
	}
	s, err := parseSettings(nil, mapEnv(env), io.Discard)
	if err != nil {
		t.Fatalf("the Deployment's environment is not a valid configuration: %v", err)
	}
	if s.DrainDelay == 0 {
		t.Errorf("EDGE_DRAIN_DELAY is 0: rolling updates would cut requests")
	}

	// Files: the key file and the TLS pair live in Secret volumes mounted
	// whole (no subPath, so updates reach the edge's watcher).
	secretMount := func(file, secret string) {
		for _, vm := range c.VolumeMounts {
			if filepath.Dir(file) != vm.MountPath {
				continue
			}
			if vm.SubPath != "" {
				t.Errorf("%s: mounted with subPath: updates would never arrive", file)
			}
			for _, v := range pod.Volumes {
				if v.Name == vm.Name && v.Secret != nil && v.Secret.SecretName == secret {
					return
				}
			}
		}
		t.Errorf("%s is not in a mount of Secret %s", file, secret)
	}
	secretMount(s.KeysFile, "partner-edge-keys")
	secretMount(s.TLSCert, "partner-edge-tls")
	secretMount(s.TLSKey, "partner-edge-tls")

	// Ports: the container's are the listeners'.
	portOf := func(addr, what string) int32 {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("%s %q: %v", what, addr, err)
		}
		for _, cp := range c.Ports {
			if cp.Name != "" && itoa(cp.ContainerPort) == p {
				return cp.ContainerPort
			}
		}
		t.Errorf("no container port for %s %s", what, addr)
		return 0
	}
	portOf(s.Addr, "EDGE_ADDR") // the public listener has its container port too
	admin := portOf(s.AdminAddr, "EDGE_ADMIN_ADDR")
	named := map[string]int32{}
	for _, cp := range c.Ports {
		named[cp.Name] = cp.ContainerPort
	}

	// Probes: readiness on the admin listener's /readyz (503 until every
	// PMS has a snapshot, while draining, without a usable key file), in
	// plain HTTP as that listener serves; liveness never on health (503
	// while draining).
	rp := c.ReadinessProbe
	if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/readyz" {
		t.Fatalf("readiness probe is not GET /readyz: %+v", rp)
	}
	if got := named[rp.HTTPGet.Port.StrVal]; rp.HTTPGet.Port.IntVal != admin && got != admin {
		t.Errorf("readiness probe port %v is not EDGE_ADMIN_ADDR's %d", rp.HTTPGet.Port, admin)
	}
	if rp.HTTPGet.Scheme != "" && rp.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("readiness scheme %s: the admin listener serves plain HTTP", rp.HTTPGet.Scheme)
	}
	if lp := c.LivenessProbe; lp == nil || (lp.HTTPGet != nil && lp.HTTPGet.Path == "/v1/health") {
		t.Errorf("liveness probe missing or on /v1/health (503 while draining would restart a draining pod)")
	}

	// Grace: SIGTERM, drain delay, shutdown wait, then a margin to flush
	// telemetry; a preStop sleep, if any, comes first.
	need := s.DrainDelay + s.ShutdownWait
	if h := c.Lifecycle; h != nil && h.PreStop != nil && h.PreStop.Sleep != nil {
		need += time.Duration(h.PreStop.Sleep.Seconds) * time.Second
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if grace < need+3*time.Second || grace > need+30*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v, want EDGE_DRAIN_DELAY + EDGE_SHUTDOWN_TIMEOUT (%v) plus 3-30 s", grace, need)
	}

	// Security: the restricted Pod Security Standard, as the image's user.
	sc := c.SecurityContext
	switch {
	case sc == nil, sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot, sc.RunAsUser == nil || *sc.RunAsUser != 65532,
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation,
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem,
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0,
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("container security context is not restricted: %+v", sc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("the service account token is mounted; the edge never calls the API server")
	}

	// Resources: requests and a memory limit, above the measured peak
	// (bench/README.md: 124 MiB for a 50,000-property brand, 122 MB at
	// 2,000 connections).
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		t.Errorf("no CPU or memory request")
	}
	if lim.Memory().Cmp(resource.MustParse("200Mi")) < 0 {
		t.Errorf("memory limit %v is under the measured peak plus margin", lim.Memory())
	}

	// The other objects select these pods and use these ports.
	podLabels := m.deploy.Spec.Template.Labels
	selects := func(what string, sel map[string]string) {
		for k, v := range sel {
			if podLabels[k] != v {
				t.Errorf("%s selects %s=%s, which the pods do not carry", what, k, v)
			}
		}
		if len(sel) == 0 {
			t.Errorf("%s selects nothing", what)
		}
	}
	selects("Service", m.svc.Spec.Selector)
	selects("PodDisruptionBudget", m.pdb.Spec.Selector.MatchLabels)
	selects("NetworkPolicy", m.netpol.Spec.PodSelector.MatchLabels)
	selects("Deployment selector", m.deploy.Spec.Selector.MatchLabels)
	for _, sp := range m.svc.Spec.Ports {
		if _, ok := named[sp.TargetPort.StrVal]; !ok {
			t.Errorf("Service port %s targets %v, no named container port", sp.Name, sp.TargetPort)
		}
	}
	if ref := m.hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != m.deploy.Name {
		t.Errorf("HPA scales %s %s", ref.Kind, ref.Name)
	}
	if m.hpa.Spec.MinReplicas == nil || *m.hpa.Spec.MinReplicas < 2 {
		t.Errorf("HPA may scale below 2 replicas")
	}
	if m.pdb.Spec.MaxUnavailable == nil && m.pdb.Spec.MinAvailable == nil {
		t.Errorf("PodDisruptionBudget bounds nothing")
	}
	var ingressPorts []string
	for _, r := range m.netpol.Spec.Ingress {
		for _, p := range r.Ports {
			ingressPorts = append(ingressPorts, p.Port.String())
		}
	}
	for name, n := range named {
		if !slices.Contains(ingressPorts, name) && !slices.Contains(ingressPorts, itoa(n)) {
			t.Errorf("NetworkPolicy lets nothing in on port %s", name)
		}
	}
	if named["metrics"] != admin {
		t.Errorf("the metrics port %d is not EDGE_ADMIN_ADDR's %d", named["metrics"], admin)
	}
}

// docs/contract.md section 18: the Deployment trusts X-Forwarded-For only from the
// ingress (the https port admits the ingress namespace alone, and the
// trusted range is not 10.0.0.0/8), spreads pods across hosts as well as
// zones, and names its image by digest.
func TestDeployManifestsNarrowed(t *testing.T) {
	m := decodeManifests(t)
	pod := m.deploy.Spec.Template.Spec
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for _, p := range strings.Split(env["EDGE_TRUSTED_PROXIES"], ",") {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(p))
		if err != nil || pfx.Bits() < 12 {
			t.Errorf("EDGE_TRUSTED_PROXIES %q: %q is wider than a cluster's pod range", env["EDGE_TRUSTED_PROXIES"], p)
		}
	}
	httpsFrom := 0
	for _, r := range m.netpol.Spec.Ingress {
		https := slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Port != nil && p.Port.String() == "https"
		})
		if !https {
			continue
		}
		if len(r.From) == 0 {
			t.Errorf("the https port is open to every pod: X-Forwarded-For from any of them would be believed")
		}
		for _, f := range r.From {
			if f.NamespaceSelector == nil || len(f.NamespaceSelector.MatchLabels) == 0 || f.IPBlock != nil {
				t.Errorf("https admits %+v, not the ingress namespace", f)
			}
			httpsFrom++
		}
	}
	if httpsFrom == 0 {
		t.Errorf("no rule admits the ingress on https")
	}
	keys := map[string]bool{}
	for _, tsc := range pod.TopologySpreadConstraints {
		keys[tsc.TopologyKey] = true
		if sel := tsc.LabelSelector; sel == nil || sel.MatchLabels["app.kubernetes.io/name"] != "partner-edge" {
			t.Errorf("spread on %s selects %v, not the edge's pods", tsc.TopologyKey, sel)
		}
	}
	if !keys["kubernetes.io/hostname"] || !keys["topology.kubernetes.io/zone"] {
		t.Errorf("pods spread over %v, want hosts and zones", keys)
	}
	if !regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`).MatchString(c.Image) {
		t.Errorf("image %q is not pinned by digest", c.Image)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// placeholder is a valid value for a variable the manifests take from a
// Secret.
func placeholder(name string) string {
	switch name {
	case "EDGE_REDIS_URL":
		return "redis://redis.partner-edge:6379/0"
	case "EDGE_FLEET_SECRET":
		return strings.Repeat("s", 32)
	}
	return "placeholder"
}
