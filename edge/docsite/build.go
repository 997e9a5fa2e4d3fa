package docsite

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"

	"github.com/partner-edge/partner-edge/problem"
)

//go:embed templates/*.html assets/site.css assets/favicon.svg
var sources embed.FS

// receivers are the webhook receivers the Receiving webhooks page shows,
// as TestWebhookReceiverExamples builds and runs them (the Go one is a
// program of its own, kept out of the module's packages by its build
// constraint, which the page leaves out).
//
//go:embed examples/receiver.go examples/receiver.mjs examples/receiver.py
var receivers embed.FS

// receiverSources is the Receiving webhooks page's data: each receiver's
// source as shown.
type receiverSources struct{ Go, JavaScript, Python string }

func readReceivers() (receiverSources, error) {
	var r receiverSources
	for _, f := range []struct {
		name string
		dst  *string
	}{{"receiver.go", &r.Go}, {"receiver.mjs", &r.JavaScript}, {"receiver.py", &r.Python}} {
		b, err := receivers.ReadFile("examples/" + f.name)
		if err != nil {
			return r, err
		}
		*f.dst = strings.TrimPrefix(string(b), "//go:build ignore\n\n")
	}
	return r, nil
}

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"statusText": http.StatusText,
	"kebab":      func(c problem.Code) string { return path.Base(ErrorPage(c)) },
}).ParseFS(sources, "templates/*.html"))

// builder renders the pages of one Build.
type builder struct {
	opts Options
	site *Site
}

// page is what the layout needs besides the page's own content; the
// layout reads DocsURL and Contact from the site's Options.
type page struct {
	Options
	Addr  string // the page's address (pageHome, ErrorPage(...), ...)
	Title string
	Data  any
}

// Link is the URL of the page or asset at addr as written in the page p:
// absolute under BasePath when the edge serves the site, else relative to
// p's file (so that the written site works wherever it is put).
func (p page) Link(addr string) string {
	if p.BasePath != "" {
		return p.BasePath + "/" + addr
	}
	depth := strings.Count(p.Addr, "/") // errors/<code>/index counts its folder
	return strings.Repeat("../", depth) + fileName(addr)
}

// fileName is the site's file of the page or asset at addr.
func fileName(addr string) string {
	switch {
	case addr == pageHome:
		return "index.html"
	case path.Ext(addr) != "":
		return addr
	}
	return addr + ".html"
}

// Nav lists the main pages for the layout's navigation.
func (p page) Nav() [][2]string {
	return [][2]string{{pageHome, "Home"}, {pageReference, "API reference"}, {pageErrors, "Errors"},
		{pageFieldErrors, "Field errors"}, {pageAuth, "Authentication"}, {pageRateLimits, "Rate limits"},
		{pageSync, "Keeping in sync"}, {pageWebhooks, "Receiving webhooks"}, {pageChangelog, "Changelog"}}
}

// PublicURL is the URL partners call, for the examples: the deployment's
// (Options.PublicURL), or the OpenAPI document's template when none was given.
func (p page) PublicURL() string {
	return cmp.Or(p.Options.PublicURL, "https://{service}.{brand}.example.com")
}

// ContactText is the contact as shown: the address of a mailto: link.
func (p page) ContactText() string { return strings.TrimPrefix(p.Contact, "mailto:") }

// codePage is the data of one problem code's page.
type codePage struct {
	problem.Entry
	TypeURI    string
	When, Do   string
	Example    string // status line, headers and body as the edge sends them
	FieldCodes []string
}

func (b *builder) build() error {
	for name, contentType := range map[string]string{assetSiteCSS: "text/css; charset=utf-8", assetFavicon: "image/svg+xml"} {
		data, err := sources.ReadFile(name)
		if err != nil {
			return err
		}
		b.site.add(name, contentType, cspPage, data)
	}

	var codes []codePage
	for _, e := range problem.All() {
		cp := b.codePage(e)
		codes = append(codes, cp)
		title := string(e.Code) + ": " + e.Title
		if err := b.render(ErrorPage(e.Code), title, "code", cp); err != nil {
			return err
		}
		if b.opts.BasePath == "" {
			// errors/<code>/index.html: the type URI on a plain file server.
			if err := b.render(ErrorPage(e.Code)+"/index", title, "code", cp); err != nil {
				return err
			}
		}
	}
	recv, err := readReceivers()
	if err != nil {
		return err
	}
	pages := []struct {
		addr, title, tmpl string
		data              any
	}{
		{pageHome, "Hospitality Partner API v1", "home", nil},
		{pageErrors, "Errors", "errors", codes},
		{pageFieldErrors, "Field-error codes", "field-errors", fieldCodes},
		{pageAuth, "Authentication", "authentication", nil},
		{pageRateLimits, "Rate limits", "rate-limits", nil},
		{pageSync, "Keeping in sync", "sync", nil},
		{pageWebhooks, "Receiving webhooks", "webhooks", recv},
		{pageChangelog, "Changelog", "changelog", changelog},
		{"404", "Page not found", "notfound", nil},
	}
	for _, pg := range pages {
		if err := b.render(pg.addr, pg.title, pg.tmpl, pg.data); err != nil {
			return err
		}
	}
	if err := b.openapi(); err != nil {
		return err
	}
	return b.reference()
}

// render executes the page template tmpl into the file of addr.
func (b *builder) render(addr, title, tmpl string, data any) error {
	var buf bytes.Buffer
	p := page{Options: b.opts, Addr: addr, Title: title, Data: data}
	if err := templates.ExecuteTemplate(&buf, tmpl, p); err != nil {
		return fmt.Errorf("docs: page %q: %w", addr, err)
	}
	b.site.add(fileName(addr), "text/html; charset=utf-8", cspPage, buf.Bytes())
	return nil
}

// codePage gathers the page of registry entry e; its example is written by
// the real problem.Writer, as the edge would answer the example request.
func (b *builder) codePage(e problem.Entry) codePage {
	g, ok := guides[e.Code]
	if !ok { // a code added to the registry without its guide still gets a page
		g = guide{example: &problem.Error{Code: e.Code}}
	}
	ex := *g.example
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, cmp.Or(g.path, "/v1/properties"), nil)
	pw := problem.Writer{DocsURL: b.opts.DocsURL, Now: b.opts.Now}
	pw.Write(rec, req, "req_4sVh2Kq8ZtR1nXw7Lp3Da9Ec", &ex)
	res := rec.Result()
	var ex2 strings.Builder
	fmt.Fprintf(&ex2, "HTTP/1.1 %d %s\n", res.StatusCode, http.StatusText(res.StatusCode))
	for _, k := range slices.Sorted(maps.Keys(res.Header)) {
		if k == "Content-Length" {
			continue
		}
		fmt.Fprintf(&ex2, "%s: %s\n", k, strings.Join(res.Header[k], ", "))
	}
	fmt.Fprintf(&ex2, "\n%s", rec.Body.String())
	cp := codePage{Entry: e, TypeURI: problem.TypeURI(b.opts.DocsURL, e.Code), When: g.when, Do: g.do, Example: ex2.String()}
	for _, f := range ex.Errors {
		if !slices.Contains(cp.FieldCodes, f.Code) {
			cp.FieldCodes = append(cp.FieldCodes, f.Code)
		}
	}
	return cp
}
