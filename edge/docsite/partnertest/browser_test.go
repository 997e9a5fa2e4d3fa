package partnertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/partner-edge/partner-edge/problem"
)

// browser starts Debian's headless Chromium (fresh profile, no network
// beyond the page) and returns a context of one tab, and the console and
// log errors the tab reports.
func browser(t *testing.T) (context.Context, *consoleErrors) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	need(t, "Chromium (Debian package chromium)", err)
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser is cancelled, and TempDir's
	// cleanup then fails the test. This cleanup, registered before the
	// browser's (so run after it), retries and tolerates a leftover.
	profile, err := os.MkdirTemp("", "partnertest-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 20 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond) // the outside event: Chromium's helpers exiting
		}
	})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	errs := &consoleErrors{}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				errs.add("console." + string(e.Type) + ": " + strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			errs.add("exception: " + e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError {
				errs.add(string(e.Entry.Source) + ": " + e.Entry.Text + " " + e.Entry.URL)
			}
		}
	})
	if err := chromedp.Run(ctx, log.Enable()); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx, errs
}

type consoleErrors struct {
	mu   sync.Mutex
	list []string
}

func (c *consoleErrors) add(s string) { c.mu.Lock(); c.list = append(c.list, s); c.mu.Unlock() }

// take returns and clears the errors seen so far.
func (c *consoleErrors) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.list
	c.list = nil
	return l
}

// open navigates to url and returns the document's HTTP status and the
// text of its first h1.
func open(ctx context.Context, url string) (int64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang bound, not a speed target
	defer cancel()
	res, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	if err != nil {
		return 0, "", err
	}
	var h1 string
	if err := chromedp.Run(ctx, chromedp.Text("h1", &h1, chromedp.NodeVisible)); err != nil {
		return res.Status, "", err
	}
	return res.Status, strings.TrimSpace(h1), nil
}

// typeURIs is the problem type of every code of the registry: taken from a
// real answer of the demo where a request can provoke the code, else the
// registry's URI under the demo's docs URL.
func typeURIs(t *testing.T, d *demo) (map[problem.Code]string, map[problem.Code]bool) {
	t.Helper()
	ua := []string{"User-Agent", "partnertest/1.0"}
	bearer := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	with := func(parts ...[]string) []string {
		var h []string
		for _, p := range parts {
			h = append(h, p...)
		}
		return h
	}
	live := bearer(liveKey)
	from := []string{"X-Forwarded-For", unknownFrom()} // an address of its own, in every -count repetition
	type probe struct {
		method, path string
		hdr          []string
	}
	probes := []probe{
		{"GET", "/v1/nothing-here", nil},
		{"GET", "/v1/properties/", nil},
		{"GET", "/v1/Properties", nil},
		{"POST", "/v1/properties", nil},
		{"GET", "/v1/properties", ua},
		{"GET", "/v1/properties", with(ua, []string{"Authorization", "Basic eDp5"})},
		{"GET", "/v1/properties", with(ua, bearer(expiredKey))},
		{"GET", "/v1/properties", with(ua, bearer(suspendedKey))},
		{"GET", "/v1/properties", with(ua, bearer(otherKey))},
		{"GET", "/v1/properties", with(ua, bearer(noScopeKey))},
		{"GET", "/v1/properties", with(live, []string{"User-Agent", ""})}, // Go omits an empty User-Agent
		{"GET", "/v1/properties", with(live, []string{"User-Agent", "x"})},
		{"GET", "/v1/properties", with(ua, live, []string{"Accept", "text/html"})},
		{"GET", "/v1/properties?a=%zz", with(ua, live)},
		{"GET", "/v1/properties?per_page=1", with(ua, live)},
		{"GET", "/v1/properties?page=x", with(ua, live)},
		{"GET", "/v1/properties?perPage=0", with(ua, live)},
		{"GET", "/v1/properties/12345", with(ua, live)},
		{"GET", "/v1/properties/0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c", with(ua, live)},
		// An unknown key, then another from the same (forwarded) address:
		// the demo's failed-auth throttle allows one.
		{"GET", "/v1/properties", with(ua, bearer("svc_live_NoSuchKeyNoSuchKeyNoSuchKey02"), from)},
		{"GET", "/v1/properties", with(ua, bearer("svc_live_NoSuchKeyNoSuchKeyNoSuchKey03"), from)},
	}
	real := map[problem.Code]string{}
	for _, p := range probes {
		status, _, body := call(t, p.method, d.origin()+p.path, p.hdr...)
		var pb struct {
			Type string       `json:"type"`
			Code problem.Code `json:"code"`
		}
		if err := json.Unmarshal(body, &pb); err != nil || pb.Code == "" {
			t.Fatalf("%s %s: %d %s: not a problem", p.method, p.path, status, body)
		}
		real[pb.Code] = pb.Type
	}
	uris := map[problem.Code]string{}
	for _, e := range problem.All() {
		if u, ok := real[e.Code]; ok {
			uris[e.Code] = u
		} else {
			uris[e.Code] = problem.TypeURI(d.docsURL, e.Code)
		}
	}
	got := map[problem.Code]bool{}
	for c := range real {
		got[c] = true
	}
	if len(real) < 18 {
		t.Errorf("only %d codes provoked from the demo: %v", len(real), real)
	}
	return uris, got
}

// Every problem type of the registry, and documentationUrl, opens in
// Chromium: status 200 and a heading naming the code, with JavaScript off;
// no page logs a console error (acceptance 1 and 2).
func TestProblemPagesOpenInChromium(t *testing.T) {
	d := startDemo(t)
	uris, fromDemo := typeURIs(t, d)
	ctx, errs := browser(t)
	if err := chromedp.Run(ctx, emulation.SetScriptExecutionDisabled(true)); err != nil {
		t.Fatal(err)
	}
	for _, e := range problem.All() {
		uri := uris[e.Code]
		if !strings.HasPrefix(uri, d.docsURL+"/errors/") {
			t.Errorf("%s: type %s is not under the demo's docs %s", e.Code, uri, d.docsURL)
		}
		status, h1, err := open(ctx, uri)
		switch {
		case err != nil:
			t.Errorf("%s: %s: %v", e.Code, uri, err)
		case status != 200 || !strings.Contains(h1, string(e.Code)):
			t.Errorf("%s: %s answered %d with heading %q", e.Code, uri, status, h1)
		}
	}
	_, _, body := call(t, "GET", d.base, "Authorization", "Bearer "+liveKey, "User-Agent", "partnertest/1.0")
	var info struct {
		Data struct {
			DocumentationURL string `json:"documentationUrl"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &info); err != nil || info.Data.DocumentationURL != d.docsURL {
		t.Fatalf("documentationUrl %q (%v), want %q", info.Data.DocumentationURL, err, d.docsURL)
	}
	status, h1, err := open(ctx, info.Data.DocumentationURL)
	if err != nil || status != 200 || h1 == "" {
		t.Errorf("documentationUrl %s: %d, heading %q, %v", info.Data.DocumentationURL, status, h1, err)
	}
	if l := errs.take(); len(l) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(l, "\n"))
	}
	t.Logf("%d problem pages opened (%d at types of real answers), and documentationUrl", len(uris), len(fromDemo))
}

// axeResult is what axe.run reports of one page.
type axeResult struct {
	Violations []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target []any `json:"target"`
			Any    []struct {
				Data json.RawMessage `json:"data"`
			} `json:"any"`
		} `json:"nodes"`
	} `json:"violations"`
}

// axe-core, injected into each page, finds no serious or critical
// violation on the reference, the home page and every problem page, and
// no page logs a console error, scripts on (acceptance 2).
func TestPagesPassAxe(t *testing.T) {
	// Beside the other tests: it opens only the site's pages, never /v1,
	// so it cannot trip the edge's failed-auth throttle they provoke; its
	// Chromium is its own. The package's longest test on a busy machine.
	t.Parallel()
	d := startDemo(t)
	src, err := os.ReadFile(filepath.Join(repoRoot, ".ci/docsite/node_modules/axe-core/axe.min.js"))
	need(t, "axe-core (npm ci --prefix .ci/docsite)", err)
	ctx, errs := browser(t)
	pages := []string{d.docsURL, d.docsURL + "/reference", d.docsURL + "/errors", d.docsURL + "/field-errors",
		d.docsURL + "/authentication", d.docsURL + "/rate-limits", d.docsURL + "/keeping-in-sync", d.docsURL + "/receiving-webhooks",
		d.docsURL + "/changelog"}
	for _, e := range problem.All() {
		pages = append(pages, problem.TypeURI(d.docsURL, e.Code))
	}
	if only := os.Getenv("DOCSITE_AXE_ONLY"); only != "" { // while fixing one page
		pages = []string{d.docsURL + only}
	}
	for _, url := range pages {
		status, h1, err := open(ctx, url)
		if err != nil || status != 200 || h1 == "" {
			t.Errorf("%s: %d, heading %q, %v", url, status, h1, err)
			continue
		}
		var res axeResult
		actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		err = chromedp.Run(actx,
			chromedp.Evaluate(string(src), nil),
			chromedp.Evaluate(`axe.run(document, {resultTypes: ["violations"]})`, &res, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
				return p.WithAwaitPromise(true)
			}))
		cancel()
		if err != nil {
			t.Errorf("%s: axe: %v", url, err)
			continue
		}
		for _, v := range res.Violations {
			if v.Impact == "serious" || v.Impact == "critical" {
				var data []string // what axe measured (the colours of color-contrast), each once
				seen := map[string]bool{}
				for _, n := range v.Nodes {
					var m struct{ FgColor, BgColor string }
					if len(n.Any) > 0 && json.Unmarshal(n.Any[0].Data, &m) == nil && m.FgColor != "" {
						if k := m.FgColor + " on " + m.BgColor; !seen[k] {
							seen[k] = true
							data = append(data, fmt.Sprintf("%s, e.g. %v", k, n.Target))
						}
					} else if len(data) < 5 {
						data = append(data, fmt.Sprint(n.Target))
					}
				}
				t.Errorf("%s: axe %s (%s): %s, %d nodes, first:\n%s", url, v.ID, v.Impact, v.Help, len(v.Nodes), strings.Join(data, "\n"))
			}
		}
		if l := errs.take(); len(l) > 0 {
			t.Errorf("%s: console errors:\n%s", url, strings.Join(l, "\n"))
		}
	}
	if shots := os.Getenv("DOCSITE_SCREENSHOTS"); shots != "" {
		screenshot(t, ctx, d.docsURL+"/reference", filepath.Join(shots, "docsite-reference.png"))
		screenshot(t, ctx, problem.TypeURI(d.docsURL, problem.UnknownQueryParameter), filepath.Join(shots, "docsite-problem-page.png"))
	}
}

// screenshot saves the viewport of url as a PNG (DOCSITE_SCREENSHOTS=dir:
// the images under docs/ that README shows).
func screenshot(t *testing.T, ctx context.Context, url, file string) {
	var png []byte
	if err := chromedp.Run(ctx, chromedp.Navigate(url), chromedp.CaptureScreenshot(&png)); err != nil {
		t.Errorf("screenshot %s: %v", url, err)
		return
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Error(err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", file)
}
