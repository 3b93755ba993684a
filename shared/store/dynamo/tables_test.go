package dynamo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// TestCreateTables checks the tables CreateTables makes against shared/store/dynamo/tablespec.go (the CDK
// stack's source too), that a second run keeps them, and that a table of another
// layout under the same name is an error rather than a silent reuse.
func TestCreateTables(t *testing.T) {
	e := newEnv(t, envConfig{}) // newEnv asserts the dynalite TTL warning
	ctx := t.Context()
	for name, spec := range map[string]dynamo.TableSpec{e.main: dynamo.Main, e.tokens: dynamo.Tokens} {
		out, err := e.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		if err := dynamo.MatchesSpec(out.Table, spec); err != nil {
			t.Errorf("table %s: %v", name, err)
		}
		if out.Table.TableStatus != "ACTIVE" {
			t.Errorf("table %s is %s, want ACTIVE", name, out.Table.TableStatus)
		}
	}

	err := dynamo.CreateTables(ctx, e.client, e.main, e.tokens)
	var w *dynamo.TTLWarning
	if !errors.As(err, &w) {
		t.Fatalf("second CreateTables = %v, want only the TTL warning", err)
	}
	if msg := w.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, e.main) || !strings.Contains(msg, e.tokens) {
		t.Errorf("warning %q: want one line naming both tables", msg)
	}

	// A table with only a partition key, then CreateTables on that name.
	odd := e.main + "-odd"
	if _, err := e.client.CreateTable(ctx, dynamo.TableInput(odd, dynamo.TableSpec{PartitionKey: "PK"})); err != nil {
		t.Fatal(err)
	}
	err = dynamo.CreateTables(ctx, e.client, odd, e.tokens)
	if err == nil || errors.As(err, &w) {
		t.Errorf("CreateTables over a table of another layout = %v, want an error", err)
	}

	for _, names := range [][2]string{{"", "x"}, {"x", ""}, {"same", "same"}} {
		if err := dynamo.CreateTables(ctx, e.client, names[0], names[1]); err == nil || errors.As(err, &w) {
			t.Errorf("CreateTables(%q, %q) = %v, want an error", names[0], names[1], err)
		}
	}
}
