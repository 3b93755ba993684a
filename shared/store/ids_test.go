package store

import "testing"

func TestParseIssueKey(t *testing.T) {
	tests := []struct {
		in     string
		prefix string
		n      int64
		ok     bool
	}{
		{"AAC-42", "AAC", 42, true},
		{"aac-42", "AAC", 42, true},
		{"Ab1-7", "AB1", 7, true},
		{"X-1", "X", 1, true},
		{"ABCDEFGHIJ-9", "ABCDEFGHIJ", 9, true},
		{"ABCDEFGHIJK-9", "", 0, false}, // prefix too long
		{"AAC-0", "", 0, false},
		{"AAC-042", "", 0, false},
		{"AAC--1", "", 0, false},
		{"AAC-+1", "", 0, false},
		{"AAC-1a", "", 0, false},
		{"AAC-", "", 0, false},
		{"-1", "", 0, false},
		{"1AC-1", "", 0, false},
		{"AAC 1", "", 0, false},
		{"AAC-99999999999999999999", "", 0, false},
		{"aacı-1", "", 0, false}, // dotless i upper-cases to I: not an ASCII key
		{"550e8400-e29b-41d4-a716-446655440000", "", 0, false},
		{"", "", 0, false},
	}
	for _, tc := range tests {
		p, n, ok := ParseIssueKey(tc.in)
		if p != tc.prefix || n != tc.n || ok != tc.ok {
			t.Errorf("ParseIssueKey(%q) = %q %d %v, want %q %d %v", tc.in, p, n, ok, tc.prefix, tc.n, tc.ok)
		}
	}
}

func TestValidWorkspaceKey(t *testing.T) {
	for k, want := range map[string]bool{"AAC": true, "A": true, "A1B2": true, "ABCDEFGHIJ": true,
		"": false, "aac": false, "1AB": false, "AA-C": false, "ABCDEFGHIJK": false, "ÄAC": false} {
		if got := ValidWorkspaceKey(k); got != want {
			t.Errorf("ValidWorkspaceKey(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestIDs(t *testing.T) {
	a, b := NewIssueID(), NewIssueID()
	if a == b || !ValidIssueID(a) || !ValidIssueID(b) {
		t.Errorf("NewIssueID = %q, %q", a, b)
	}
	for _, bad := range []string{"", "AAC-1", "550e8400e29b41d4a716446655440000", "urn:uuid:550e8400-e29b-41d4-a716-446655440000"} {
		if ValidIssueID(bad) {
			t.Errorf("ValidIssueID(%q) = true", bad)
		}
	}
	if u1, u2 := NewULID(), NewULID(); len(u1) != 26 || u1 >= u2 {
		t.Errorf("NewULID = %q, %q: want 26 chars, increasing", u1, u2)
	}
	if IssueKey("AAC", 42) != "AAC-42" {
		t.Error("IssueKey")
	}
}

func TestPageLimit(t *testing.T) {
	for in, want := range map[int]int{0: 25, 1: 1, 25: 25, 100: 100, 101: 100, 100000: 100, -1: 1} {
		if got := PageLimit(in); got != want {
			t.Errorf("PageLimit(%d) = %d, want %d", in, got, want)
		}
	}
}
