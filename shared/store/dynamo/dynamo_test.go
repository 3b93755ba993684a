package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/shared/store/storetest"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// One dynalite per test binary: starting it takes about a second, and every test uses
// tables (or workspaces) of its own.
var (
	dynaliteOnce sync.Once
	dynaliteSrv  *emulator.Server
	dynaliteErr  error
	tableSeq     atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dynaliteSrv != nil {
		dynaliteSrv.Stop()
	}
	os.Exit(code)
}

// server returns the shared dynalite, starting it on first use.
func server(t testing.TB) *emulator.Server {
	t.Helper()
	dynaliteOnce.Do(func() {
		dynaliteSrv, dynaliteErr = emulator.Start(context.Background(), emulator.Dynalite)
	})
	if dynaliteErr != nil {
		t.Fatal(dynaliteErr)
	}
	return dynaliteSrv
}

// env is a store on fresh tables plus what tests inspect it with.
type env struct {
	store  *dynamo.Store
	client *dynamodb.Client
	calls  *dynamo.CallCounter
	main   string
	tokens string
}

type envConfig struct {
	transport func(cfg *aws.Config)
	opts      []dynamo.Option
}

// newEnv creates two tables with unique names on the shared dynalite and a store on
// them. Tables are left to die with the emulator.
func newEnv(t testing.TB, ec envConfig) *env {
	t.Helper()
	srv := server(t)
	cfg := srv.AWSConfig()
	if ec.transport != nil {
		ec.transport(&cfg)
	}
	calls := dynamo.CountCalls(&cfg)
	client := dynamodb.NewFromConfig(cfg)
	n := tableSeq.Add(1)
	e := &env{
		client: client, calls: calls,
		main:   fmt.Sprintf("aacmcp-main-%d-%d", os.Getpid(), n),
		tokens: fmt.Sprintf("aacmcp-tokens-%d-%d", os.Getpid(), n),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := dynamo.CreateTables(ctx, client, e.main, e.tokens)
	var w *dynamo.TTLWarning
	if !errors.As(err, &w) {
		t.Fatalf("CreateTables against dynalite: want a TTLWarning (dynalite lacks UpdateTimeToLive), got %v", err)
	}
	e.store = dynamo.New(client, e.main, e.tokens, ec.opts...)
	calls.Reset()
	return e
}

// sharedEnv is one pair of tables for the whole conformance suite: its subtests use
// unique workspace ids, as storetest promises.
var (
	sharedOnce sync.Once
	shared     *env
)

func TestConformance(t *testing.T) {
	sharedOnce.Do(func() {
		shared = newEnv(t, envConfig{opts: []dynamo.Option{dynamo.WithCursorSecret([]byte("conformance"))}})
	})
	if shared == nil {
		t.Fatal("shared tables were not created")
	}
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		return storetest.Backend{Queries: shared.store, Tokens: shared.store}
	})
}

// TestOAuthConformance runs the OAuth store suite on tables of its own: its Policy
// subtest expects the one global policy item never set.
func TestOAuthConformance(t *testing.T) {
	e := newEnv(t, envConfig{})
	storetest.RunOAuth(t, func(t *testing.T) storetest.OAuthBackend {
		return storetest.OAuthBackend{Queries: e.store, Tokens: e.store, OAuth: e.store}
	})
	if err := e.store.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestListMembers: the members of one workspace, with their e-mails, by user id; an
// agent or another workspace's member never among them.
func TestListMembers(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, ws := range []string{"acme", "other"} {
		if _, err := e.store.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "AAC", Name: ws, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []store.Member{
		{WorkspaceID: "acme", UserID: "carol", Role: store.RoleViewer, CreatedAt: at},
		{WorkspaceID: "acme", UserID: "alice", Role: store.RoleAdmin, Email: "Alice@Example.com", CreatedAt: at},
		{WorkspaceID: "other", UserID: "bob", Role: store.RoleMember, CreatedAt: at},
	} {
		if _, err := e.store.UpdateMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.store.CreateAgent(ctx, store.Agent{WorkspaceID: "acme", ID: "bot", Name: "Bot", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.ListMembers(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Member{
		{WorkspaceID: "acme", UserID: "alice", Role: store.RoleAdmin, Email: "alice@example.com", CreatedAt: at},
		{WorkspaceID: "acme", UserID: "carol", Role: store.RoleViewer, CreatedAt: at},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListMembers(acme) = %+v, want %+v", got, want)
	}
	for _, ws := range []string{"empty", "bad#ws"} {
		if got, err := e.store.ListMembers(ctx, ws); err != nil || got == nil || len(got) != 0 {
			t.Errorf("ListMembers(%q) = %+v, %v; want an empty list", ws, got, err)
		}
	}
}
