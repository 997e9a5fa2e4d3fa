package docsite

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/partner-edge/partner-edge/edge/internal/contentcoding"
	"github.com/partner-edge/partner-edge/problem"
)

// DefaultDocsURL is operations.md's default EDGE_DOCS_URL.
const DefaultDocsURL = "https://developer.example.com/partner-api"

// Options says where the site will live.
type Options struct {
	// DocsURL is the deployment's docs_url: the base of the problem type URIs
	// in the example bodies and of documentationUrl. Empty means
	// DefaultDocsURL. A trailing slash is ignored.
	DocsURL string
	// BasePath, when set (for example "/docs"), renders every link as an
	// absolute path under it without the .html extension, as Handler serves
	// them (the edge's EDGE_DOCS_PATH). Empty renders relative links to the
	// .html files, so the written site works from any directory of any
	// static file server.
	BasePath string
	// PublicURL is the URL partners call (EDGE_PUBLIC_URL): the server URL
	// of the served OpenAPI document and of the site's examples. Empty
	// keeps the document's own, a template.
	PublicURL string
	// Contact is EDGE_DOCS_CONTACT as ParseContact returns it (an http(s)
	// URL or a mailto: URL): shown on the site and in the served
	// document's info.contact. Empty: no contact at all.
	Contact string
	// Now dates the example bodies. Nil means a fixed example time, so the
	// same options always build the same bytes.
	Now func() time.Time
}

// exampleTime is the timestamp of the example bodies (docs/contract.md section 6's).
var exampleTime = time.Date(2026, 11, 22, 9, 41, 0, 0, time.UTC)

// file is one file of the site with the headers it is served with.
type file struct {
	body        []byte
	contentType string
	csp         string // Content-Security-Policy
	etag        string
	// coded holds the body compressed in each coding (by
	// contentcoding.Coding), made on the first request that wants it:
	// each page is compressed once, not per request.
	coded [3]struct {
		once sync.Once
		body []byte
	}
}

// codedBody returns f's body in coding c, compressing it with enc once.
func (f *file) codedBody(c contentcoding.Coding, enc *contentcoding.Encoder) []byte {
	e := &f.coded[c]
	e.once.Do(func() { e.body = enc.Append(nil, c, f.body) })
	return e.body
}

// Site is a rendered documentation site: files by their path under the
// site's root ("index.html", "errors/route-not-found.html", ...).
type Site struct {
	files map[string]*file
}

// Page addresses of the site, as in a URL under the docs URL (no
// extension). ErrorPage gives a problem code's.
const (
	pageHome          = ""
	pageReference     = "reference"
	pageErrors        = "errors"
	pageFieldErrors   = "field-errors"
	pageAuth          = "authentication"
	pageRateLimits    = "rate-limits"
	pageSync          = "keeping-in-sync"
	pageWebhooks      = "receiving-webhooks"
	pageChangelog     = "changelog"
	assetSiteCSS      = "assets/site.css"
	assetReferenceCSS = "assets/reference.css"
	assetFavicon      = "assets/favicon.svg" // so browsers do not ask the API for /favicon.ico
)

// ErrorPage is the page address of code under the site's root: the part of
// its problem type URI after the docs URL (problem.TypeURI), without the
// leading slash.
func ErrorPage(c problem.Code) string {
	return strings.TrimPrefix(problem.TypeURI("", c), "/")
}

// Build renders the whole site.
func Build(opts Options) (*Site, error) {
	opts.DocsURL = strings.TrimRight(cmp.Or(opts.DocsURL, DefaultDocsURL), "/")
	opts.BasePath = strings.TrimRight(opts.BasePath, "/")
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	if opts.Now == nil {
		opts.Now = func() time.Time { return exampleTime }
	}
	b := &builder{opts: opts, site: &Site{files: map[string]*file{}}}
	if err := b.build(); err != nil {
		return nil, err
	}
	return b.site, nil
}

// Files lists the paths of the site's files, sorted.
func (s *Site) Files() []string {
	return slices.Sorted(maps.Keys(s.files))
}

// WriteDir writes the site into dir (created when missing; files of the
// same names are replaced, others left alone): docs/docsite.md, "Building and serving".
func (s *Site) WriteDir(dir string) error {
	for _, p := range s.Files() {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("docs: %w", err)
		}
		if err := os.WriteFile(dst, s.files[p].body, 0o644); err != nil {
			return fmt.Errorf("docs: %w", err)
		}
	}
	return nil
}

func (s *Site) add(p, contentType, csp string, body []byte) {
	sum := sha256.Sum256(body)
	s.files[p] = &file{body: body, contentType: contentType, csp: csp,
		etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
}

// cspPage is the Content-Security-Policy of the site's own pages: nothing
// but the site's stylesheet, no script at all, no framing, no forms.
const cspPage = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// HandlerAt is the site built to be served at opts.BasePath
// (EDGE_DOCS_PATH); nil, nil when that is empty (the site is off).
func HandlerAt(opts Options) (http.Handler, error) {
	if opts.BasePath == "" {
		return nil, nil
	}
	site, err := Build(opts)
	if err != nil {
		return nil, err
	}
	return site.Handler(), nil
}

// WriteSite builds the site for a static file server (opts.BasePath is
// ignored) and writes it into dir (`edge docs build`); it returns how many
// files it wrote.
func WriteSite(dir string, opts Options) (int, error) {
	opts.BasePath = ""
	site, err := Build(opts)
	if err != nil {
		return 0, err
	}
	return len(site.Files()), site.WriteDir(dir)
}
