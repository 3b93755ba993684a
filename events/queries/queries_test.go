package queries

import (
	"slices"
	"strings"
	"testing"
)

func TestSavedQueriesLoad(t *testing.T) {
	want := []string{
		"denial_spike_tokens", "denied_by_reason_24h", "destructive_calls_by_client",
		"destructive_per_token_per_day", "destructive_without_confirm", "top_tools_per_workspace_per_day",
	}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	all := All()
	if len(all) != len(want) {
		t.Fatalf("All() returned %d queries", len(all))
	}
	for _, q := range all {
		if q.Description == "" || strings.Contains(q.Description, "\n") || strings.HasPrefix(q.Description, "-") {
			t.Errorf("%s: description %q", q.Name, q.Description)
		}
		if !strings.HasPrefix(q.SQL, "-- "+q.Description) {
			t.Errorf("%s: SQL does not start with its description", q.Name)
		}
	}
	for _, bad := range []string{"", "nope", "../queries", "denied_by_reason_24h.sql", "sub/denied_by_reason_24h"} {
		if _, err := Get(bad); err == nil {
			t.Errorf("Get(%q) succeeded", bad)
		}
	}
}
