//go:build tools

// Package jaeger pins the Jaeger v2 all-in-one binary that the trace tests
// start (cmd/edge's Jaeger test); .ci/run builds it with
// `go build -o <dir>/jaeger github.com/jaegertracing/jaeger/cmd/jaeger`.
package jaeger

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
