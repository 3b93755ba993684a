package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// adminStore is what the admin commands need from a backend: tenants, members,
// agents and tokens. Both the SQLite and the DynamoDB store provide it.
type adminStore interface {
	GetWorkspace(ctx context.Context, ws string) (store.Workspace, error)
	CreateWorkspace(ctx context.Context, w store.Workspace) (store.Workspace, error)
	GetMember(ctx context.Context, ws, user string) (store.Member, error)
	UpdateMember(ctx context.Context, m store.Member) (store.Member, error)
	DeleteMember(ctx context.Context, ws, user string) error
	ListMembers(ctx context.Context, ws string) ([]store.Member, error)
	CreateAgent(ctx context.Context, a store.Agent) (store.Agent, error)
	auth.TokenStore
	store.Confirmations
	store.WorkspaceLister
}

// Backend names.
const (
	backendSQLite   = "sqlite"
	backendDynamoDB = "dynamodb"
)

// backendFlags selects where admin commands read and write: the local SQLite database
// under --data, or the DynamoDB tables of a deployed stack (or an emulator).
type backendFlags struct {
	kind        string
	table       string
	tokensTable string
	region      string
	endpointURL string
}

func addBackendFlags(c *cobra.Command, g *globals, b *backendFlags) {
	f := c.Flags()
	f.StringVar(&b.kind, "backend", backendSQLite, "store: sqlite (the database under --data) or dynamodb")
	f.StringVar(&b.table, "table", g.env.getenv("AACMCP_TABLE"), "DynamoDB main table (env AACMCP_TABLE; --backend dynamodb)")
	f.StringVar(&b.tokensTable, "tokens-table", g.env.getenv("AACMCP_TOKENS_TABLE"), "DynamoDB tokens table (env AACMCP_TOKENS_TABLE; --backend dynamodb)")
	f.StringVar(&b.region, "region", "", "AWS region (default: the AWS configuration's; --backend dynamodb)")
	f.StringVar(&b.endpointURL, "endpoint-url", "", "DynamoDB endpoint, e.g. a local emulator (default: AWS_ENDPOINT_URL_DYNAMODB or AWS)")
}

// validate checks the flag combination before anything is opened.
func (b *backendFlags) validate() error {
	switch b.kind {
	case backendSQLite:
		return nil
	case backendDynamoDB:
		if b.table == "" || b.tokensTable == "" {
			return usagef("--backend dynamodb needs --table and --tokens-table (or AACMCP_TABLE and AACMCP_TOKENS_TABLE)")
		}
		for flag, name := range map[string]string{"--table": b.table, "--tokens-table": b.tokensTable} {
			if !validTableName(name) {
				return usagef("%s %q: a DynamoDB table name is 3-255 letters, digits, '_', '-' or '.'", flag, name)
			}
		}
		return nil
	default:
		return usagef("--backend %q: want sqlite or dynamodb", b.kind)
	}
}

// open returns the selected store and a function that releases it.
func (b *backendFlags) open(ctx context.Context, c *cobra.Command, g *globals) (adminStore, func(), error) {
	if err := b.validate(); err != nil {
		return nil, nil, err
	}
	if b.kind == backendSQLite {
		for _, name := range []string{"table", "tokens-table", "region", "endpoint-url"} {
			if c.Flags().Changed(name) {
				return nil, nil, usagef("--%s needs --backend dynamodb", name)
			}
		}
		// Admin commands print their result; the store's routine logs (such as an
		// applied migration) would only clutter it.
		quiet := slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
		// A running server keeps members and issues in memory: tell it first.
		release, err := announceWrites(ctx, g.dataDir)
		if err != nil {
			return nil, nil, err
		}
		s, err := openSQLite(ctx, g.dataDir, sqlite.WithLogger(quiet))
		if err != nil {
			_ = release()
			return nil, nil, err
		}
		return s, func() {
			_ = s.Close()
			if err := release(); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "warning: %v; restart aacmcp serve so that it reads the change\n", err)
			}
		}, nil
	}
	s, err := b.openDynamo(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Close waits for writes the store makes after answering (none of the admin
	// commands cause one today), so none is cut off when the command exits.
	return s, func() { _ = s.Close() }, nil
}

// dataDirHMACKey is the data folder's audit HMAC key (made on first use): serve's
// digests, and the gateway's digests and cursor key.
func dataDirHMACKey(dataDir string) ([]byte, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	return audit.LoadOrCreateHMACKey(filepath.Join(dataDir, audit.HMACKeyFile))
}

// dbFile is the SQLite database inside the data folder.
func dbFile(dataDir string) string { return filepath.Join(dataDir, "aacmcp.db") }

// openSQLite opens (creating if needed) the data folder's database.
func openSQLite(ctx context.Context, dataDir string, opts ...sqlite.Option) (*sqlite.Store, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	s, err := sqlite.Open(ctx, dbFile(dataDir), opts...)
	if err != nil {
		return nil, fmt.Errorf("open the database in %s: %w", dataDir, err)
	}
	return s, nil
}

// validTableName is DynamoDB's rule for table names, checked here so that a typo is a
// usage error rather than an AWS ValidationException.
func validTableName(s string) bool { return nameOf(s, 3, 255) }

// nameOf reports whether s is shortest to longest letters, digits, '-', '_' or '.' (ASCII):
// the alphabet of ids the CLI accepts and of DynamoDB table names.
func nameOf(s string, shortest, longest int) bool {
	if len(s) < shortest || len(s) > longest {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}
