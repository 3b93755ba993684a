package store_test

import (
	"go/build"
	"slices"
	"testing"
)

// TestBackendsReturnStorageErrors: the backends know nothing of the error contract
// clients see. They return the storage errors of this package (storetest holds each
// to errors.Is); the guard alone turns them into apperr values.
func TestBackendsReturnStorageErrors(t *testing.T) {
	const apperr = "github.com/aacworkflow/aacmcp/shared/apperr"
	for _, dir := range []string{"memory", "sqlite", "dynamo"} {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(p.Imports, apperr) {
			t.Errorf("shared/store/%s imports %s", dir, apperr)
		}
	}
}
