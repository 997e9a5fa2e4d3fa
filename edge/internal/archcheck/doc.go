// Package archcheck holds the architecture test (docs/architecture.md's
// package table against the module as `go list` sees it) and the docs'
// own checks: citations, links, anchors and cited paths resolve.
package archcheck
