package openapitest

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Contract is the checker of the module's docs/openapi.yaml, loaded once
// for every test of the process (ContractPath); a document that does not
// load fails t.
func Contract(t testing.TB) *Checker {
	t.Helper()
	c, err := contract()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	return c
}

// contract loads the document once; the Checker is read-only after.
var contract = sync.OnceValues(func() (*Checker, error) {
	path, err := ContractPath()
	if err != nil {
		return nil, err
	}
	return Load(path)
})

// ContractPath is the module's docs/openapi.yaml: found from the working
// directory (a test's is its package's directory) up to the directory of
// the module's go.mod.
func ContractPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "docs", "openapi.yaml"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it")
		}
		dir = parent
	}
}
