// Package peerfile is the bench's peer data file: what the bare, bare-write and
// TypeScript peers load, so that they answer for the same issues as aacmcp.
// package fixture writes it; it stays free of aacmcp's store so that the bare
// peers link none of it.
package peerfile

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// File is the workspace and its issues in list order.
type File struct {
	Workspace string        `json:"workspace"`
	Issues    []store.Issue `json:"issues"`
	// Cursors[i] is the next_cursor of a first page that ends with Issues[i].
	Cursors []string `json:"cursors"`
}

// Read loads the file at path.
func Read(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
