package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync/atomic"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/docsite"
)

// runDocs is "edge docs build [--docs-url URL] DIR": it writes the
// documentation site (DECISIONS.md 13) into DIR for any static file server.
// The docs URL (flag, else EDGE_DOCS_URL, else operations.md's default) is
// the base of the problem type URIs in the example bodies: the address
// where DIR will be published.
func runDocs(args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	const usage = "usage: edge docs build [--docs-url URL] DIR"
	if len(args) == 0 || args[0] != "build" {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("edge docs build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def, _ := getenv("EDGE_DOCS_URL")
	if def == "" {
		def = docsite.DefaultDocsURL
	}
	docsURL := fs.String("docs-url", def, "where DIR will be published: the problem type base (env EDGE_DOCS_URL)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return errors.New(usage)
	}
	if u, err := url.Parse(*docsURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid docs URL %q: want an absolute http or https URL", *docsURL)
	}
	site, err := docsite.Build(docsite.Options{DocsURL: *docsURL})
	if err != nil {
		return err
	}
	if err := site.WriteDir(fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d files of the documentation site to %s (problem types under %s/errors/)\n",
		len(site.Files()), fs.Arg(0), strings.TrimRight(*docsURL, "/"))
	return nil
}

// docsPath accepts empty (no site) or an absolute, clean path outside /v1
// (and not "/" itself, which holds /v1).
func (p *parser) docsPath(env string) string {
	st := p.get[env]
	v := st.value
	if v == "" {
		return ""
	}
	v = strings.TrimRight(v, "/")
	switch {
	case !strings.HasPrefix(v, "/") || v == "" || path.Clean(v) != v:
		p.bad(st, "want an absolute path such as /docs")
	case v == "/v1" || strings.HasPrefix(v, "/v1/") || strings.HasPrefix(v, "/.well-known"):
		p.bad(st, "want a path outside /v1 and /.well-known")
	case strings.ContainsAny(v, "{}*%?#"):
		p.bad(st, "want a plain path: no {, }, *, %, ? or #")
	}
	return v
}

// withDocs adds the documentation site to ec when docsPath is set, built
// for serving there with problem types under ec.DocsURL.
func withDocs(ec *edge.Config, docsPath string) error {
	if docsPath == "" {
		return nil
	}
	site, err := docsite.Build(docsite.Options{DocsURL: ec.DocsURL, BasePath: docsPath})
	if err != nil {
		return err
	}
	ec.Docs, ec.DocsPath = site.Handler(), docsPath
	return nil
}

// lateHandler serves through the handler set last; until one is set it
// answers 503 (the edge sets one before it accepts a connection).
type lateHandler struct{ h atomic.Pointer[http.Handler] }

func (l *lateHandler) set(h http.Handler) { l.h.Store(&h) }

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := l.h.Load()
	if h == nil {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}
