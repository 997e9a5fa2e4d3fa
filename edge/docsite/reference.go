package docsite

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	htmlpkg "html"
	"io"
	"slices"
	"strings"
	"sync"
)

// referenceGz is Redocly's render of docs/openapi.yaml (.ci/docsite/render,
// run by go generate), gzipped there: the render is a megabyte of HTML, a
// sixth of that compressed, and the edge's image must stay small (docs/operations.md, "Production kit").
//
//go:embed reference.html.gz
var referenceGz []byte

// referenceHTML is the render itself, unpacked once when first needed.
var referenceHTML = sync.OnceValue(func() []byte {
	zr, err := gzip.NewReader(bytes.NewReader(referenceGz))
	if err != nil {
		return nil // Build then reports a render that is not Redocly's
	}
	html, err := io.ReadAll(zr)
	if err != nil {
		return nil
	}
	return html
})

// remoteMarks are the ways an HTML page or its CSS loads something from
// elsewhere; the served reference holds none of them.
var remoteMarks = []string{`src="http`, `src="//`, `srcset="http`, `url(http`, `url("http`, `url('http`, `url(//`, `@import`}

// cutElements removes every element that opens with open (such as
// "<script") up to and including close, and returns what each held.
func cutElements(html []byte, open, close string) (rest []byte, inner [][]byte) {
	var out bytes.Buffer
	for {
		before, after, ok := bytes.Cut(html, []byte(open))
		gt, end := bytes.IndexByte(after, '>'), bytes.Index(after, []byte(close))
		if !ok || gt < 0 || end < gt {
			out.Write(html)
			return out.Bytes(), inner
		}
		out.Write(before)
		inner = append(inner, after[gt+1:end])
		html = after[end+len(close):]
	}
}

// cutRemoteLinks removes <link> elements whose href is on another host
// (Redoc's web fonts).
func cutRemoteLinks(html []byte) []byte {
	var out bytes.Buffer
	for {
		i := bytes.Index(html, []byte("<link "))
		gt := bytes.IndexByte(html[max(i, 0):], '>')
		if i < 0 || gt < 0 {
			out.Write(html)
			return out.Bytes()
		}
		elem := html[i : i+gt+1]
		out.Write(html[:i])
		if !bytes.Contains(elem, []byte(`href="http`)) && !bytes.Contains(elem, []byte(`href="//`)) {
			out.Write(elem)
		}
		html = html[i+gt+1:]
	}
}

// styleAttrs returns the values of the style attributes in html.
func styleAttrs(html []byte) (vals []string) {
	for {
		_, after, ok := bytes.Cut(html, []byte(` style="`))
		v, rest, closed := bytes.Cut(after, []byte(`"`))
		if !ok || !closed {
			return vals
		}
		vals = append(vals, string(v))
		html = rest
	}
}

// referenceOverride hides Redoc's parts that need its runtime (search, the
// colour-mode and layout switches) and adds the link back to the site.
const referenceOverride = `
/* partner-edge: the page is served without Redoc's runtime */
[data-testid="search-trigger"],[data-component-name="Sidebar/SidebarActions"]{display:none!important}
.pe-back{display:block;padding:8px 16px;font:14px/1.5 system-ui,sans-serif;background:#0b3d66;color:#fff}
.pe-back a{color:#fff}
li.tab-success.react-tabs__tab--selected{color:#1d8127!important}
li.tab-error.react-tabs__tab--selected{color:#b3261e!important}
`

// contrastFixes darken (or, on Redoc's dark panels, lighten) the colours of
// Redoc's default theme that fall short of WCAG AA contrast (4.5:1), as
// axe-core reports them (partnertest's TestPagesPassAxe).
var contrastFixes = strings.NewReplacer(
	"color:#e53935", "color:#b3261e", // code on light grey
	"color:rgba(38, 50, 56, 0.5)", "color:rgba(38, 50, 56, 0.8)", // section labels on white
	"li.tab-error{color:#d41f1c;}", "li.tab-error{color:#ff8a80;}", // tab on the dark panel
	"li.tab-success{color:#1d8127;}", "li.tab-success{color:#7ee787;}",
)

// reference turns Redocly's render into a page that loads nothing but the
// site's own stylesheet, with a bar on top linking back to the site
// (docs/docsite.md, "The API reference"): Redoc's scripts are removed, its
// style blocks move into assets/reference.css, and its style attributes stay,
// allowed by their hashes. The page is edited as bytes, not parsed
// (docs/architecture.md, "What we own, and why").
func (b *builder) reference() error {
	html := referenceHTML()
	if !bytes.Contains(html, []byte(`id="redoc"`)) {
		return errors.New("docs: reference.html is not a Redocly render (run go generate ./edge/docsite)")
	}
	html, _ = cutElements(html, "<script", "</script>")
	p := page{Options: b.opts, Addr: pageReference}
	html = bytes.ReplaceAll(html, []byte(renderPublicURL), []byte(htmlpkg.EscapeString(p.PublicURL())))
	html = bytes.ReplaceAll(html, []byte(renderDocsURL), []byte(htmlpkg.EscapeString(b.opts.DocsURL)))
	html = cutRemoteLinks(html) // web fonts: the system font serves
	html, styles := cutElements(html, "<style", "</style>")
	// Each style block followed by a newline (the nil joins one after the
	// last), then the override.
	cssText := contrastFixes.Replace(string(bytes.Join(append(styles, nil), []byte("\n"))) + referenceOverride)
	html = bytes.Replace(html, []byte(`</head>`), []byte(`<link rel="stylesheet" href="`+p.Link(assetReferenceCSS)+
		`"><link rel="icon" type="image/svg+xml" href="`+p.Link(assetFavicon)+`"></head>`), 1)
	html = bytes.Replace(html, []byte(`<html>`), []byte(`<html lang="en">`), 1)
	nav := `<body><nav class="pe-back" aria-label="Site"><a href="` + p.Link(pageHome) + `">Partner API documentation</a> / API reference` +
		` · download the OpenAPI document: <a href="` + p.Link(docOpenAPIYAML) + `" download>` + docOpenAPIYAML + `</a>, <a href="` +
		p.Link(docOpenAPIJSON) + `" download>` + docOpenAPIJSON + `</a>`
	if c := p.Contact; c != "" {
		nav += ` · contact: <a href="` + htmlpkg.EscapeString(c) + `">` + htmlpkg.EscapeString(p.ContactText()) + `</a>`
	}
	html = bytes.Replace(html, []byte(`<body>`), []byte(nav+`</nav>`), 1)
	for _, mark := range remoteMarks {
		if bytes.Contains(html, []byte(mark)) || strings.Contains(cssText, mark) {
			return errors.New("docs: reference.html loads a remote resource: " + mark)
		}
	}
	var hashes []string
	for _, v := range styleAttrs(html) {
		// The browser hashes the value it parsed: the character references
		// React writes in attribute values undone.
		sum := sha256.Sum256([]byte(htmlpkg.UnescapeString(v)))
		h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !slices.Contains(hashes, h) {
			hashes = append(hashes, h)
		}
	}
	styleSrc := "style-src 'self'"
	if len(hashes) > 0 {
		styleSrc += " 'unsafe-hashes' " + strings.Join(hashes, " ")
	}
	csp := "default-src 'none'; " + styleSrc + "; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	b.site.add(assetReferenceCSS, "text/css; charset=utf-8", cspPage, []byte(cssText))
	b.site.add(fileName(pageReference), "text/html; charset=utf-8", csp, html)
	return nil
}
