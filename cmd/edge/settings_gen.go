package main

// The settings tables of README.md and docs/operations.md are generated from
// settingTable (settings.go), the one place a setting is declared, so the
// docs cannot drift from what run parses. After adding or changing a row
// there, run
//
//	go generate ./cmd/edge
//
// The generator is TestSettingsTables (settings_docs_test.go) run with
// -update-docs: it renders the tables from the very rows parseSettings uses
// and rewrites the text between the settings-table marker comments. Without
// the flag the same test fails while a file is out of date, and CI runs
// `go generate ./... && git diff --exit-code` (.ci/run).

//go:generate go test -run=TestSettingsTables -update-docs .
