package docsite

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// openapiSource is docs/openapi.yaml, copied here by go generate
// (.ci/docsite/render) so that it can be embedded; a test holds the copy
// equal to docs/openapi.yaml.
//
//go:embed openapi.yaml
var openapiSource []byte

// The served documents: the contract a partner downloads and feeds to a
// client generator (docs/contract.md section 21).
const (
	docOpenAPIYAML = "openapi.yaml"
	docOpenAPIJSON = "openapi.json"
)

// Placeholders of the reference's render (.ci/docsite/render): the render
// is of docs/openapi.yaml with its server URL and the documentationUrl
// example set to these, and Build puts the deployment's URLs in their
// place, so the page shows the partner's real addresses.
const (
	renderPublicURL = "https://edge-public-url.invalid"
	renderDocsURL   = "https://edge-docs-url.invalid"
)

// ParseContact reads EDGE_DOCS_CONTACT: empty (no contact), an http or
// https URL, or an e-mail address (mailto: optional).
func ParseContact(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if u, err := url.Parse(v); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		return v, nil
	}
	addr := strings.TrimPrefix(v, "mailto:")
	if a, err := mail.ParseAddress(addr); err == nil && a.Name == "" && a.Address == addr {
		return "mailto:" + addr, nil
	}
	return "", errors.New("want an https URL or an e-mail address")
}

// openapiYAML is docs/openapi.yaml as this deployment serves it: its
// server URL set to publicURL + /v1 (the entry's variables, which only
// templated the example host, dropped), and info.contact from contact.
// The rest of the document is docs/openapi.yaml byte for byte. An empty
// publicURL keeps the document's servers.
func openapiYAML(publicURL, contact string) ([]byte, error) {
	doc := openapiSource
	if publicURL != "" {
		start, end, ok := topLevelBlock(doc, "servers")
		if !ok {
			return nil, errors.New("docs: openapi.yaml has no servers")
		}
		first, _ := json.Marshal(publicURL + "/v1")
		doc = slices.Concat(doc[:start], fmt.Appendf(nil, "servers:\n  - url: %s\n    description: This deployment of the API.\n", first), doc[end:])
	}
	if contact != "" {
		start, _, ok := topLevelBlock(doc, "info")
		if !ok {
			return nil, errors.New("docs: openapi.yaml has no info")
		}
		field, value := "url", contact
		if addr, ok := strings.CutPrefix(contact, "mailto:"); ok {
			field, value = "email", addr
		}
		q, _ := json.Marshal(value)
		line := start + len("info:\n")
		doc = slices.Concat(doc[:line], fmt.Appendf(nil, "  contact:\n    %s: %s\n", field, q), doc[line:])
	}
	return doc, nil
}

// topLevelBlock finds the top-level key's block in a YAML document: from
// its "key:" line up to the next line that starts in the first column.
func topLevelBlock(doc []byte, key string) (start, end int, ok bool) {
	head := []byte("\n" + key + ":\n")
	i := bytes.Index(doc, head)
	if i < 0 {
		return 0, 0, false
	}
	start = i + 1
	end = start + len(head) - 1
	for end < len(doc) && (doc[end] == ' ' || doc[end] == '\n' || doc[end] == '#') {
		nl := bytes.IndexByte(doc[end:], '\n')
		if nl < 0 {
			end = len(doc)
			break
		}
		end += nl + 1
	}
	return start, end, true
}

// openapi adds the served documents, YAML and JSON, to the site.
func (b *builder) openapi() error {
	doc, err := openapiYAML(b.opts.PublicURL, b.opts.Contact)
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fmt.Errorf("docs: openapi.yaml: %w", err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, js, "", "  "); err != nil {
		return fmt.Errorf("docs: openapi.json: %w", err)
	}
	indented.WriteByte('\n')
	b.site.add(docOpenAPIYAML, "application/yaml; charset=utf-8", cspPage, doc)
	b.site.add(docOpenAPIJSON, "application/json", cspPage, indented.Bytes())
	return nil
}
