package main

import (
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// kubeServiceLinks are the variables the kubelet gives a pod for a Service
// named name with clusterIP and ports when service links are on (the
// kubelet's envvars.FromServices): NAME_SERVICE_HOST, NAME_SERVICE_PORT
// (the first port), NAME_SERVICE_PORT_<PORTNAME> per named port, and the
// Docker-link forms NAME_PORT (the first port) and NAME_PORT_<n>_<PROTO>
// with _PROTO, _PORT and _ADDR per port.
func kubeServiceLinks(name, clusterIP string, ports []corev1.ServicePort) []string {
	up := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
	n := up(name)
	first := strconv.Itoa(int(ports[0].Port))
	env := []string{n + "_SERVICE_HOST=" + clusterIP, n + "_SERVICE_PORT=" + first}
	for _, p := range ports {
		if p.Name != "" {
			env = append(env, n+"_SERVICE_PORT_"+up(p.Name)+"="+strconv.Itoa(int(p.Port)))
		}
	}
	proto := func(p corev1.ServicePort) string { // TCP when the Service leaves it out
		return strings.ToLower(string(cmp.Or(p.Protocol, corev1.ProtocolTCP)))
	}
	env = append(env, n+"_PORT="+proto(ports[0])+"://"+clusterIP+":"+first)
	for _, p := range ports {
		port := strconv.Itoa(int(p.Port))
		prefix := n + "_PORT_" + port + "_" + strings.ToUpper(proto(p))
		env = append(env, prefix+"="+proto(p)+"://"+clusterIP+":"+port,
			prefix+"_PROTO="+proto(p), prefix+"_PORT="+port, prefix+"_ADDR="+clusterIP)
	}
	return env
}

// docs/contract.md section 22: the shipped manifest keeps
// enableServiceLinks: false, with a comment saying why; and were it on,
// the variables of its own Service, or of the same Service named pms,
// edge or edge-admin, would pass the unknown-setting check beside the
// manifest's own settings.
func TestDeployManifestServiceLinks(t *testing.T) {
	m := decodeManifests(t)
	pod := m.deploy.Spec.Template.Spec
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Errorf("enableServiceLinks is not false in docs/deploy/edge.yaml")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy", "edge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	before, _, ok := strings.Cut(string(raw), "enableServiceLinks: false")
	lines := strings.Split(before, "\n")
	var comment []string // the comment lines just above the field
	for i := len(lines) - 2; i >= 0 && strings.HasPrefix(strings.TrimSpace(lines[i]), "#"); i-- {
		comment = append([]string{strings.TrimSpace(lines[i])}, comment...)
	}
	why := strings.Join(comment, " ")
	if !ok || !strings.Contains(why, "service-link") || !strings.Contains(why, "defence in depth") || !strings.Contains(why, "no longer required") {
		t.Errorf("enableServiceLinks: false has no comment saying why (service-link variables, no longer required, defence in depth): %q", why)
	}

	var env []string
	for _, e := range pod.Containers[0].Env {
		if known := knownEnv(); known[e.Name] {
			env = append(env, e.Name+"=x")
		}
	}
	for i, name := range []string{m.svc.Name, "pms", "edge", "edge-admin", "pms-candidate"} {
		env = append(env, kubeServiceLinks(name, "10.96.0."+strconv.Itoa(10+i), m.svc.Spec.Ports)...)
	}
	if err := checkEnviron(env); err != nil {
		t.Errorf("service links refused: %v", err)
	}
	if !strings.Contains(strings.Join(env, " "), "EDGE_ADMIN_PORT=tcp://") {
		t.Fatalf("the links generated lack EDGE_ADMIN_PORT: %v", env)
	}
}
