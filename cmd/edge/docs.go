package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/partner-edge/partner-edge/cmd/internal/settingval"
	"github.com/partner-edge/partner-edge/edge/docsite"
)

// docsUsage is edge docs build's first line of help.
const docsUsage = "usage: edge docs build [--docs-url URL] DIR"

// docsBuildLine is edge docs build's command line: the settings that make the
// docs URL, as the edge reads them.
var docsBuildLine = settingval.Line{Name: "edge docs build", Settings: []string{"EDGE_DOCS_URL", "EDGE_PUBLIC_URL", "EDGE_DOCS_PATH", "EDGE_DOCS_CONTACT"},
	Usage: []string{docsUsage, "\nWrites the documentation site into DIR for any static file server; DIR will be",
		"published at the docs URL (the base of the problem types in the example bodies)."}}

// runDocs is "edge docs build [--docs-url URL] DIR": it writes the
// documentation site (docs/contract.md section 13) into DIR for any static
// file server. The docs URL (docsBuildURL) is the base of the problem type
// URIs in the example bodies: the address where DIR will be published.
func runDocs(args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "build" {
		return errors.New(docsUsage)
	}
	p, rest, err := docsBuildLine.Parse(settingTable(), args[1:], getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] == "" {
		return errors.New(docsUsage)
	}
	docsURL := docsBuildURL(p)
	opts := docsite.Options{DocsURL: docsURL, PublicURL: settingval.Read(p, "EDGE_PUBLIC_URL", settingval.PublicURL),
		Contact: settingval.Read(p, "EDGE_DOCS_CONTACT", docsite.ParseContact)}
	if err := p.Err(); err != nil {
		return err
	}
	n, err := docsite.WriteSite(rest[0], opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d files of the documentation site to %s (problem types under %s/errors/)\n", n, rest[0], docsURL)
	return nil
}

// docsBuildURL is the docs URL of edge docs build: EDGE_DOCS_URL, else
// EDGE_PUBLIC_URL + EDGE_DOCS_PATH (or /docs) as the edge would serve it,
// else docsite.DefaultDocsURL.
func docsBuildURL(p *settingval.Parser) string {
	if u := settingval.Read(p, "EDGE_DOCS_URL", settingval.DocsURL); u != "" {
		return u
	}
	pub := settingval.Read(p, "EDGE_PUBLIC_URL", settingval.PublicURL)
	if pub == "" {
		return docsite.DefaultDocsURL
	}
	dp := settingval.Read(p, "EDGE_DOCS_PATH", settingval.DocsPath)
	if dp == "" {
		dp = "/docs"
	}
	return pub + dp
}

// resolveDocsURL settles docs_url (docs/contract.md section 18): EDGE_DOCS_URL
// when set, else EDGE_PUBLIC_URL + EDGE_DOCS_PATH, so that every problem
// type and documentationUrl opens on the edge itself. Outside the demo a
// docs URL nobody gave is a start-up error: the old default pointed at a
// placeholder host and every link was dead. In the demo it stays empty
// here: run points it at the demo's own address once it listens, or at
// docsite.DefaultDocsURL when the site is off.
func resolveDocsURL(p *settingval.Parser, s *settings) {
	switch {
	case s.DocsURL != "":
	case s.PublicURL != "" && s.DocsPath != "":
		s.DocsURL = s.PublicURL + s.DocsPath
	case s.PMSBaseURL == "": // the demo
	case s.PublicURL == "" && p.Get("EDGE_PUBLIC_URL").Set: // given but refused: read says why
	case s.PublicURL == "":
		p.Fail(errors.New("EDGE_PUBLIC_URL (the URL partners call) or EDGE_DOCS_URL is required when PMS_BASE_URL is set: problem types and documentationUrl are built from it"))
	default:
		p.Fail(errors.New("EDGE_DOCS_PATH is off: set EDGE_DOCS_URL to where the documentation site is published"))
	}
}
