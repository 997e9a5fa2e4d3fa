// Package partnertest uses the edge as a partner developer would: clients
// generated from docs/openapi.yaml (Go with oapi-codegen, TypeScript with
// openapi-typescript) and a real headless Chromium call a running edge in
// front of the demo's simulators, with Prism validating traffic against the
// document.
//
// It is part of the edge's module, so go test ./... runs it: one go.mod to
// keep tidy. .ci/run installs the pinned Node tools (.ci/partner,
// .ci/docsite) and Chromium before the tests; with CI=true a missing tool
// fails a test, outside CI it skips it.
package partnertest
