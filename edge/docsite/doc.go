// Package docsite builds the partner documentation site (docs/contract.md
// section 13) from the project's sources of truth, so the site cannot drift
// from what the edge does: the API reference is Redocly's render of
// docs/openapi.yaml, served without Redoc's runtime, and each code of
// problem's registry has a page whose example is written by the real
// problem.Writer (docs/docsite.md).
//
// Build renders the whole site in memory. WriteDir writes it for any static
// file server (edge docs build DIR); Handler serves it (EDGE_DOCS_PATH).
package docsite

//go:generate bash ../../.ci/docsite/render
