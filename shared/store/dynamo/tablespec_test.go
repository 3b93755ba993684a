package dynamo

import (
	"slices"
	"strings"
	"testing"
)

func TestKeyAttributes(t *testing.T) {
	tests := []struct {
		name string
		spec TableSpec
		want []string
	}{
		{"main", Main, []string{"PK", "SK", "GSI1PK", "GSI1SK"}},
		{"tokens", Tokens, []string{"PK", "SK", "GSI1PK", "GSI1SK"}},
		{"shared attribute listed once", TableSpec{PartitionKey: "PK", SortKey: "SK", GSIs: []GSISpec{{Name: "ByKey", PartitionKey: "SK", SortKey: "PK"}}}, []string{"PK", "SK"}},
		{"no sort key", TableSpec{PartitionKey: "PK"}, []string{"PK"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.KeyAttributes(); !slices.Equal(got, tt.want) {
				t.Errorf("KeyAttributes() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGSI(t *testing.T) {
	g, ok := Main.GSI("GSI1")
	if !ok || g.PartitionKey != "GSI1PK" || g.SortKey != "GSI1SK" || g.Projection != ProjectionAll {
		t.Errorf("Main.GSI(GSI1) = %+v, %v", g, ok)
	}
	if _, ok := Main.GSI("GSI2"); ok {
		t.Error("Main.GSI(GSI2) found an index that does not exist")
	}
}

// TestSpecsAreComplete guards the facts the stack's IAM conditions and TTL rely on.
func TestSpecsAreComplete(t *testing.T) {
	for name, s := range map[string]TableSpec{"main": Main, "tokens": Tokens} {
		if s.PartitionKey == "" || s.SortKey == "" || s.TTLAttribute == "" {
			t.Errorf("%s: incomplete spec %+v", name, s)
		}
		names := map[string]bool{}
		for _, g := range s.GSIs {
			if names[g.Name] {
				t.Errorf("%s: index %s declared twice", name, g.Name)
			}
			names[g.Name] = true
			if g.Projection != ProjectionAll || g.PartitionKey == "" {
				t.Errorf("%s: index %+v", name, g)
			}
		}
	}
	for _, p := range []string{TenantPrefix, TokenPrefix, FailurePrefix} {
		if !strings.HasSuffix(p, "#") || strings.ContainsAny(p, "*?") {
			t.Errorf("key prefix %q must end in # and hold no IAM wildcard", p)
		}
	}
}
