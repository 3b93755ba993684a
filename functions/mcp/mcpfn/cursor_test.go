package mcpfn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

type discardSink struct{}

func (discardSink) Write(context.Context, audit.Record) error { return nil }

// TestBuildSignsCursors: the store Build wires signs its list cursors with a key
// derived from the audit HMAC key, so a cursor verifies on every instance with that
// key and on no other; without a key (emulators) cursors are unsigned, and the two
// kinds are not interchangeable.
func TestBuildSignsCursors(t *testing.T) {
	ctx := context.Background()
	srv := emulator.StartT(t, emulator.Dynalite)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	var warn *dynamo.TTLWarning // dynalite lacks UpdateTimeToLive
	if err := dynamo.CreateTables(ctx, db, "main", "tokens"); err != nil && !errors.As(err, &warn) {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	keyA := bytes.Repeat([]byte{0xa1}, audit.MinHMACKeyBytes)
	keyB := bytes.Repeat([]byte{0xb2}, audit.MinHMACKeyBytes)
	build := func(t *testing.T, key []byte) *dynamo.Store {
		t.Helper()
		fn, err := Build(ctx, lambdaenv.Config{Table: "main", TokensTable: "tokens"}, Deps{
			DB: db, Audit: discardSink{}, Stdout: io.Discard, Logger: quiet, HMACKey: key,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fn.Close() })
		return fn.store.(*dynamo.Store)
	}

	const ws = "ws_cur"
	seed := build(t, keyA)
	if _, err := seed.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "CUR", Name: "cursors"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := seed.CreateIssue(ctx, ws, store.NewIssue{Title: fmt.Sprint("issue ", i), Status: "open", Priority: "low", CreatedBy: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	firstPage := func(t *testing.T, s *dynamo.Store) string {
		t.Helper()
		page, err := s.ListIssues(ctx, ws, store.IssueFilter{PageRequest: store.PageRequest{Limit: 1}})
		if err != nil || page.NextCursor == "" {
			t.Fatalf("first page: next cursor %q, %v; want a cursor", page.NextCursor, err)
		}
		return page.NextCursor
	}

	tests := []struct {
		name           string
		issuer, reader []byte // the audit HMAC keys of the two instances; nil for none
		ok             bool
	}{
		{"same key", keyA, keyA, true},
		{"another deployment's key", keyA, keyB, false},
		{"signed, read without a key", keyA, nil, false},
		{"unsigned, read with a key", nil, keyA, false},
		{"both without a key", nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cursor := firstPage(t, build(t, tc.issuer))
			page, err := build(t, tc.reader).ListIssues(ctx, ws, store.IssueFilter{PageRequest: store.PageRequest{Limit: 1, Cursor: cursor}})
			switch {
			case tc.ok && (err != nil || len(page.Issues) != 1):
				t.Errorf("second page: %d issues, %v; want 1 issue", len(page.Issues), err)
			case !tc.ok && !errors.Is(err, store.ErrInvalid):
				t.Errorf("second page: %d issues, %v; want invalid_arguments", len(page.Issues), err)
			}
		})
	}
}
