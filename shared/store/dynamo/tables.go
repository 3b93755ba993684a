package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// tableActiveTimeout bounds the wait for a new table to become ACTIVE.
const tableActiveTimeout = 5 * time.Minute

// TTLWarning is returned by CreateTables, after both tables exist, when the endpoint is
// a local emulator that lacks UpdateTimeToLive (dynalite). The tables work; expired
// items simply stay until deleted, which the store tolerates because it checks expiry
// on every read. Callers print Error() as one line and go on:
//
//	var w *dynamo.TTLWarning
//	if errors.As(err, &w) { fmt.Fprintln(os.Stderr, w); err = nil }
//
// Against AWS the same failure is a plain error.
type TTLWarning struct {
	Endpoint string
	Tables   []string
}

func (w *TTLWarning) Error() string {
	return fmt.Sprintf("warning: %s does not support UpdateTimeToLive; TTL is not enabled on %s (fine for a local emulator)",
		w.Endpoint, strings.Join(w.Tables, ", "))
}

// TableInput builds the CreateTable request of spec (shared/store/dynamo/tablespec.go, the definition the
// CDK stack deploys too), on-demand billing.
func TableInput(name string, spec TableSpec) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   keySchema(spec.PartitionKey, spec.SortKey),
	}
	for _, a := range spec.KeyAttributes() {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a), AttributeType: types.ScalarAttributeType(AttributeType),
		})
	}
	for _, g := range spec.GSIs {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(g.Name),
			KeySchema:  keySchema(g.PartitionKey, g.SortKey),
			Projection: &types.Projection{ProjectionType: types.ProjectionType(g.Projection)},
		})
	}
	return in
}

func keySchema(pk, sk string) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
	if sk != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	return ks
}

// CreateTables creates the main and tokens tables as shared/store/dynamo/tablespec.go declares them, waits
// until both are ACTIVE, and enables TTL on each. A table that exists already is kept if
// its key schema and indexes match the spec (so `aacmcp init` can run twice) and is an
// error otherwise. See TTLWarning for emulators without UpdateTimeToLive.
func CreateTables(ctx context.Context, client *dynamodb.Client, mainName, tokensName string) error {
	if mainName == "" || tokensName == "" || mainName == tokensName {
		return errors.New("dynamo: two distinct table names are required")
	}
	specs := []struct {
		name string
		spec TableSpec
	}{{mainName, Main}, {tokensName, Tokens}}
	for _, t := range specs {
		if err := createTable(ctx, client, t.name, t.spec); err != nil {
			return err
		}
	}
	var unsupported []string
	for _, t := range specs {
		err := enableTTL(ctx, client, t.name, t.spec.TTLAttribute)
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException" && isLocalEndpoint(client) {
			unsupported = append(unsupported, t.name)
			continue
		}
		if err != nil {
			return err
		}
	}
	if len(unsupported) > 0 {
		return &TTLWarning{Endpoint: aws.ToString(client.Options().BaseEndpoint), Tables: unsupported}
	}
	return nil
}

func createTable(ctx context.Context, client *dynamodb.Client, name string, spec TableSpec) error {
	_, err := client.CreateTable(ctx, TableInput(name, spec))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableActiveTimeout)
	if err != nil {
		return fmt.Errorf("dynamo: wait for table %s: %w", name, err)
	}
	if err := MatchesSpec(out.Table, spec); err != nil {
		return fmt.Errorf("dynamo: table %s exists with another layout: %w", name, err)
	}
	return nil
}

// MatchesSpec reports how a described table differs from spec (nil when it matches):
// key schema, and each index's key schema and projection.
func MatchesSpec(t *types.TableDescription, spec TableSpec) error {
	if t == nil {
		return errors.New("no table description")
	}
	if !sameKeys(t.KeySchema, spec.PartitionKey, spec.SortKey) {
		return fmt.Errorf("key schema is not %s/%s", spec.PartitionKey, spec.SortKey)
	}
	if len(t.GlobalSecondaryIndexes) != len(spec.GSIs) {
		return fmt.Errorf("has %d global secondary indexes, want %d", len(t.GlobalSecondaryIndexes), len(spec.GSIs))
	}
	for _, g := range spec.GSIs {
		i := slices.IndexFunc(t.GlobalSecondaryIndexes, func(d types.GlobalSecondaryIndexDescription) bool {
			return aws.ToString(d.IndexName) == g.Name
		})
		if i < 0 {
			return fmt.Errorf("index %s is missing", g.Name)
		}
		d := t.GlobalSecondaryIndexes[i]
		if !sameKeys(d.KeySchema, g.PartitionKey, g.SortKey) {
			return fmt.Errorf("index %s key schema is not %s/%s", g.Name, g.PartitionKey, g.SortKey)
		}
		if d.Projection == nil || string(d.Projection.ProjectionType) != g.Projection {
			return fmt.Errorf("index %s projection is not %s", g.Name, g.Projection)
		}
	}
	return nil
}

func sameKeys(ks []types.KeySchemaElement, pk, sk string) bool {
	want := keySchema(pk, sk)
	return slices.EqualFunc(ks, want, func(a, b types.KeySchemaElement) bool {
		return aws.ToString(a.AttributeName) == aws.ToString(b.AttributeName) && a.KeyType == b.KeyType
	})
}

// enableTTL turns TTL on unless it is on (or turning on) for attr already: AWS refuses
// to enable it twice.
func enableTTL(ctx context.Context, client *dynamodb.Client, name, attr string) error {
	if attr == "" {
		return nil
	}
	d, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err == nil && d.TimeToLiveDescription != nil {
		st := d.TimeToLiveDescription.TimeToLiveStatus
		if (st == types.TimeToLiveStatusEnabled || st == types.TimeToLiveStatusEnabling) &&
			aws.ToString(d.TimeToLiveDescription.AttributeName) == attr {
			return nil
		}
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("dynamo: enable TTL on %s: %w", name, err)
	}
	return nil
}

// isLocalEndpoint reports whether the client talks to a loopback endpoint, i.e. a
// local emulator rather than AWS.
func isLocalEndpoint(client *dynamodb.Client) bool {
	ep := aws.ToString(client.Options().BaseEndpoint)
	if ep == "" {
		return false
	}
	u, err := url.Parse(ep)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
