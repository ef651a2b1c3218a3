//go:build tools

// Package tools pins the code generators in go.mod, so `go generate ./...`
// runs the versions every clone builds with.
package tools

import (
	_ "github.com/99designs/gqlgen"
	_ "github.com/a-h/templ/cmd/templ"
)
