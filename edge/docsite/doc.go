// Package docsite builds the partner documentation site (docs/contract.md
// section 13) from the project's sources of truth, so the site cannot drift
// from what the edge does:
//
//   - the API reference is Redocly's server-side render of docs/openapi.yaml
//     (reference.html.gz, made by go generate and committed; a test holds its
//     embedded document equal to docs/openapi.yaml). Redoc's runtime bundle
//     is neither committed nor loaded: the page is static HTML and CSS, with
//     no script and no remote resource, so it passes a strict
//     Content-Security-Policy and works on a closed network;
//   - one page per code of problem's registry, whose example body is written
//     by the real problem.Writer, and pages for the field-error codes,
//     authentication, rate limits and the changelog.
//
// Build renders the whole site in memory. WriteDir writes it for any static
// file server (edge docs build DIR); Handler serves it (EDGE_DOCS_PATH).
package docsite

//go:generate bash ../../.ci/docsite/render
