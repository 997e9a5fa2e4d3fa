package docsite

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"regexp"
	"slices"
	"strings"
)

// referenceHTML is Redocly's render of docs/openapi.yaml (.ci/docsite/render,
// run by go generate).
//
//go:embed reference.html
var referenceHTML []byte

var (
	scriptElem   = regexp.MustCompile(`(?s)<script\b[^>]*>.*?</script>`)
	remoteLink   = regexp.MustCompile(`<link\b[^>]*\bhref="(https?:)?//[^"]*"[^>]*>`)
	styleElem    = regexp.MustCompile(`(?s)<style\b[^>]*>(.*?)</style>`)
	styleAttr    = regexp.MustCompile(`\sstyle="([^"]*)"`)
	remoteSource = regexp.MustCompile(`(?i)\b(src|srcset|poster|data)="(https?:)?//|url\(\s*['"]?(https?:)?//|@import`)
)

// siteCSSOverride hides Redoc's parts that need its runtime (search, the
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
// site's own stylesheet: Redoc's scripts (the hydration, which would load
// its bundle from a CDN, and the colour-mode script) are removed, so the
// server-side rendered markup is the page; its inline styles move into
// assets/reference.css. The style attributes Redoc renders stay inline and
// are allowed one by one by their hashes (CSP 'unsafe-hashes').
func (b *builder) reference() error {
	html := referenceHTML
	if !bytes.Contains(html, []byte(`id="redoc"`)) {
		return errors.New("docs: reference.html is not a Redocly render (run go generate ./edge/docsite)")
	}
	html = scriptElem.ReplaceAll(html, nil)
	html = remoteLink.ReplaceAll(html, nil) // web fonts: the system font serves
	var css bytes.Buffer
	for _, m := range styleElem.FindAllSubmatch(html, -1) {
		css.Write(m[1])
		css.WriteByte('\n')
	}
	css.WriteString(referenceOverride)
	cssText := contrastFixes.Replace(css.String())
	css.Reset()
	css.WriteString(cssText)
	p := page{Addr: pageReference, b: b}
	first := true
	html = styleElem.ReplaceAllFunc(html, func([]byte) []byte {
		if !first {
			return nil
		}
		first = false
		return []byte(`<link rel="stylesheet" href="` + p.Link(assetReferenceCSS) + `"><link rel="icon" type="image/svg+xml" href="` + p.Link(assetFavicon) + `">`)
	})
	html = bytes.Replace(html, []byte(`<html>`), []byte(`<html lang="en">`), 1)
	html = bytes.Replace(html, []byte(`<body>`), []byte(`<body><nav class="pe-back" aria-label="Site"><a href="`+p.Link(pageHome)+`">Partner API documentation</a> / API reference</nav>`), 1)
	if loc := remoteSource.Find(html); loc != nil {
		return errors.New("docs: reference.html loads a remote resource: " + string(loc))
	}
	var hashes []string
	for _, m := range styleAttr.FindAllSubmatch(html, -1) {
		sum := sha256.Sum256([]byte(unescapeAttr(string(m[1]))))
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
	b.site.add(assetReferenceCSS, "text/css; charset=utf-8", cspPage, css.Bytes())
	b.site.add(pageReference+".html", "text/html; charset=utf-8", csp, html)
	return nil
}

// unescapeAttr undoes the character references React writes in attribute
// values: the browser hashes the value it parsed.
func unescapeAttr(s string) string {
	return strings.NewReplacer("&quot;", `"`, "&#x27;", "'", "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}
