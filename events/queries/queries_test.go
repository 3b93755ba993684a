package queries

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSavedQueriesLoad(t *testing.T) {
	want := []string{
		"denial_spike_tokens", "denied_by_reason_24h", "destructive_by_confirmation", "destructive_calls_by_client",
		"destructive_per_token_per_day", "destructive_without_confirm", "report_authorization_events",
		"report_calls_per_hour", "report_denials", "report_destructive", "report_slowest_calls", "report_top_tools",
		"top_tools_per_workspace_per_day",
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

// TestReadmeListsEverySavedQuery keeps the table of saved queries in docs/cli.md (its
// audit log section, which the README links) equal to the files here.
func TestReadmeListsEverySavedQuery(t *testing.T) {
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ")
	for _, path := range []string{"../../docs/cli.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, table, ok := strings.Cut(string(b), "| saved query | what it answers |")
		if !ok {
			t.Errorf("%s has no saved query table", path)
			continue
		}
		table, _, _ = strings.Cut(table, "\n\n")
		var listed []string
		for _, m := range row.FindAllStringSubmatch(table, -1) {
			listed = append(listed, m[1])
		}
		if !slices.Equal(listed, Names()) {
			t.Errorf("%s lists saved queries %v, want %v (in name order)", path, listed, Names())
		}
	}
}

// TestDenialSpikeEndsAtDeliveryLag keeps the SQL's window end equal to DeliveryLag,
// the value infra checks against Firehose's buffer interval.
func TestDenialSpikeEndsAtDeliveryLag(t *testing.T) {
	q, err := Get("denial_spike_tokens")
	if err != nil {
		t.Fatal(err)
	}
	end := fmt.Sprintf("SELECT current_timestamp - INTERVAL '%d' MINUTE AS window_end", int(DeliveryLag.Minutes()))
	if !strings.Contains(q.SQL, end) {
		t.Errorf("denial_spike_tokens.sql does not end its windows at DeliveryLag: want %q", end)
	}
	for _, stale := range []string{"current_timestamp - INTERVAL '1' HOUR", "current_timestamp - INTERVAL '25' HOUR"} {
		if strings.Contains(q.SQL, stale) {
			t.Errorf("a window still ends at now: %q", stale)
		}
	}
}
