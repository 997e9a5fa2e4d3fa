package docsite

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The reference page's edit, by golang.org/x/net/html instead of by bytes
// (docs/architecture.md, "What we own, and why"): both run in the same
// benchmark run, BenchmarkReference against BenchmarkReferenceXNetHTML.
func BenchmarkReferenceXNetHTML(b *testing.B) {
	bl := &builder{opts: Options{BasePath: "/docs"}, site: &Site{files: map[string]*file{}}}
	for b.Loop() {
		if err := bl.referenceXNet(); err != nil {
			b.Fatal(err)
		}
	}
}

// Both edits give a page with the same text and allow the same style
// attributes: what a reader sees does not depend on which one runs.
func TestReferenceXNetHTMLSameText(t *testing.T) {
	opts := Options{DocsURL: "https://partners.brand.test/docs", PublicURL: "https://partners.brand.test", Contact: "mailto:a@brand.test", BasePath: "/docs"}
	a := &builder{opts: opts, site: &Site{files: map[string]*file{}}}
	x := &builder{opts: opts, site: &Site{files: map[string]*file{}}}
	if err := a.reference(); err != nil {
		t.Fatal(err)
	}
	if err := x.referenceXNet(); err != nil {
		t.Fatal(err)
	}
	textOfPage := func(page []byte) string {
		doc, err := html.Parse(bytes.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.TextNode {
				b.WriteString(n.Data)
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
		return b.String()
	}
	if textOfPage(a.site.files["reference.html"].body) != textOfPage(x.site.files["reference.html"].body) {
		t.Error("the two edits give pages of different text")
	}
	if a.site.files["reference.html"].csp != x.site.files["reference.html"].csp {
		t.Error("the two edits allow different style attributes")
	}
}

// remoteHref reports whether a link's href is on another host (Redoc's
// web fonts).
func remoteHref(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == "href" && (strings.HasPrefix(a.Val, "http") || strings.HasPrefix(a.Val, "//")) {
			return true
		}
	}
	return false
}

// textOf is the text an element holds (a <style>'s rules).
func textOf(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

// elem makes an element with attributes given as name, value pairs.
func elem(a atom.Atom, attrs ...string) *html.Node {
	n := &html.Node{Type: html.ElementNode, DataAtom: a, Data: a.String()}
	for i := 0; i+1 < len(attrs); i += 2 {
		n.Attr = append(n.Attr, html.Attribute{Key: attrs[i], Val: attrs[i+1]})
	}
	return n
}

// text makes a text node.
func text(s string) *html.Node { return &html.Node{Type: html.TextNode, Data: s} }

// withChildren appends children to n and returns n.
func withChildren(n *html.Node, children ...*html.Node) *html.Node {
	for _, c := range children {
		n.AppendChild(c)
	}
	return n
}

// referenceXNet is reference written with golang.org/x/net/html, kept
// beside it for BenchmarkReferenceXNetHTML: it turns Redocly's render into a page that loads nothing but the
// site's own stylesheet: Redoc's scripts (the hydration, which would load
// its bundle from a CDN, and the colour-mode script) are removed, so the
// server-side rendered markup is the page; its inline styles move into
// assets/reference.css. The style attributes Redoc renders stay inline and
// are allowed one by one by their hashes (CSP 'unsafe-hashes'). The
// render's placeholder addresses become the deployment's, and a bar on top
// links back to the site and to the OpenAPI documents.
func (b *builder) referenceXNet() error {
	raw := referenceHTML()
	if !bytes.Contains(raw, []byte(`id="redoc"`)) {
		return errors.New("docs: reference.html is not a Redocly render (run go generate ./edge/docsite)")
	}
	doc, err := html.Parse(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("docs: reference.html: %w", err)
	}
	public := b.opts.PublicURL
	if public == "" {
		public = "https://{service}.{brand}.example.com" // the document's own template
	}
	addresses := strings.NewReplacer(renderPublicURL, public, renderDocsURL, b.opts.DocsURL)
	var (
		css        strings.Builder
		hashes     []string
		head, body *html.Node
	)
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			switch {
			case c.Type == html.TextNode:
				c.Data = addresses.Replace(c.Data)
			case c.Type != html.ElementNode:
			case c.DataAtom == atom.Script || c.DataAtom == atom.Link && remoteHref(c):
				n.RemoveChild(c) // web fonts too: the system font serves
			case c.DataAtom == atom.Style:
				css.WriteString(textOf(c))
				css.WriteByte('\n')
				n.RemoveChild(c)
			default:
				switch c.DataAtom {
				case atom.Html:
					c.Attr = append(c.Attr, html.Attribute{Key: "lang", Val: "en"})
				case atom.Head:
					head = c
				case atom.Body:
					body = c
				}
				for i, a := range c.Attr {
					c.Attr[i].Val = addresses.Replace(a.Val)
					if a.Key == "style" {
						sum := sha256.Sum256([]byte(a.Val))
						if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !slices.Contains(hashes, h) {
							hashes = append(hashes, h)
						}
					}
				}
				walk(c)
			}
			c = next
		}
	}
	walk(doc)
	if head == nil || body == nil {
		return errors.New("docs: reference.html has no head or body")
	}
	css.WriteString(referenceOverride)
	cssText := contrastFixes.Replace(css.String())
	p := page{Options: b.opts, Addr: pageReference}
	head.AppendChild(elem(atom.Link, "rel", "stylesheet", "href", p.Link(assetReferenceCSS)))
	head.AppendChild(elem(atom.Link, "rel", "icon", "type", "image/svg+xml", "href", p.Link(assetFavicon)))
	nav := withChildren(elem(atom.Nav, "class", "pe-back", "aria-label", "Site"),
		withChildren(elem(atom.A, "href", p.Link(pageHome)), text("Partner API documentation")),
		text(" / API reference · download the OpenAPI document: "),
		withChildren(elem(atom.A, "href", p.Link(docOpenAPIYAML), "download", ""), text(docOpenAPIYAML)),
		text(", "),
		withChildren(elem(atom.A, "href", p.Link(docOpenAPIJSON), "download", ""), text(docOpenAPIJSON)))
	if c := b.opts.Contact; c != "" {
		nav.AppendChild(text(" · contact: "))
		nav.AppendChild(withChildren(elem(atom.A, "href", c), text(strings.TrimPrefix(c, "mailto:"))))
	}
	body.InsertBefore(nav, body.FirstChild)
	var out bytes.Buffer
	if err := html.Render(&out, doc); err != nil {
		return fmt.Errorf("docs: reference.html: %w", err)
	}
	page := out.Bytes()
	for _, mark := range remoteMarks {
		if bytes.Contains(page, []byte(mark)) || strings.Contains(cssText, mark) {
			return errors.New("docs: reference.html loads a remote resource: " + mark)
		}
	}
	styleSrc := "style-src 'self'"
	if len(hashes) > 0 {
		styleSrc += " 'unsafe-hashes' " + strings.Join(hashes, " ")
	}
	csp := "default-src 'none'; " + styleSrc + "; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	b.site.add(assetReferenceCSS, "text/css; charset=utf-8", cspPage, []byte(cssText))
	b.site.add(pageReference+".html", "text/html; charset=utf-8", csp, page)
	return nil
}
