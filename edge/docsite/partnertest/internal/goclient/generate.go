// Package goclient is the Go client a partner generates from
// docs/openapi.yaml with oapi-codegen (pinned by the module go.mod's tool
// directive). client.gen.go is generated; TestGoClientIsFresh fails when it
// differs from a fresh generation.
package goclient

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../../../../docs/openapi.yaml
