package dynamo

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/store"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// issueCheck is the key check ListIssues applies for workspace ws.
func issueCheck(ws string) keyCheck {
	return func(k map[string]string) bool {
		id, ok := strings.CutPrefix(k[attrPK], issuePK(ws, ""))
		return ok && validPart(id) && k[attrSK] == skMeta && k[attrGSI1PK] == issueListPK(ws)
	}
}

func issueStart(ws, id string) item {
	return item{
		attrPK: avS(issuePK(ws, id)), attrSK: avS(skMeta),
		attrGSI1PK: avS(issueListPK(ws)), attrGSI1SK: avS("UPD#2026-01-01T00:00:00.000000000Z#" + id),
	}
}

// rawCursor builds a cursor by hand, as a client forging one would.
func rawCursor(t *testing.T, b cursorBody) string {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

func TestCursor(t *testing.T) {
	signed := New(nil, "m", "t", WithCursorSecret([]byte("k1")))
	otherSecret := New(nil, "m", "t", WithCursorSecret([]byte("k2")))
	plain := New(nil, "m", "t")
	fp := fingerprint("ws_a", "issues", "", "", "", "")
	good, err := signed.encodeCursor(fp, issueStart("ws_a", "i1"))
	if err != nil {
		t.Fatal(err)
	}
	plainGood, err := plain.encodeCursor(fp, issueStart("ws_a", "i1"))
	if err != nil {
		t.Fatal(err)
	}
	foreign := map[string]string{
		attrPK: issuePK("ws_b", "i1"), attrSK: skMeta, attrGSI1PK: issueListPK("ws_b"), attrGSI1SK: "UPD#x#i1",
	}
	// A MAC-carrying cursor with its key swapped for another workspace's.
	var tampered cursorBody
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	if err := json.Unmarshal(raw, &tampered); err != nil {
		t.Fatal(err)
	}
	tampered.K = foreign

	tests := []struct {
		name   string
		store  *Store
		cursor string
		fp     string
		ok     bool
	}{
		{"signed round trip", signed, good, fp, true},
		{"plain round trip", plain, plainGood, fp, true},
		{"other query", signed, good, fingerprint("ws_a", "issues", "open", "", "", ""), false},
		{"other secret", otherSecret, good, fp, false},
		{"MAC missing where required", signed, plainGood, fp, false},
		{"MAC where none is expected", plain, good, fp, false},
		{"key swapped under a MAC", signed, rawCursor(t, tampered), fp, false},
		{"foreign partition without a secret", plain, rawCursor(t, cursorBody{V: 1, F: fp, K: foreign}), fp, false},
		{"extra key attribute", plain, rawCursor(t, cursorBody{V: 1, F: fp, K: map[string]string{
			attrPK: issuePK("ws_a", "i1"), attrSK: skMeta, attrGSI1PK: issueListPK("ws_a"), attrGSI1SK: "UPD#x#i1", "X": "y",
		}}), fp, false},
		{"id with separator", plain, rawCursor(t, cursorBody{V: 1, F: fp, K: map[string]string{
			attrPK: issuePK("ws_a", "i1#x"), attrSK: skMeta, attrGSI1PK: issueListPK("ws_a"), attrGSI1SK: "UPD#x",
		}}), fp, false},
		{"wrong version", plain, rawCursor(t, cursorBody{V: 2, F: fp, K: foreign}), fp, false},
		{"not base64", plain, "!!!", fp, false},
		{"not JSON", plain, base64.RawURLEncoding.EncodeToString([]byte("nope")), fp, false},
		{"unknown field", plain, base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"f":"` + fp + `","k":{},"z":1}`)), fp, false},
		{"too long", plain, strings.Repeat("A", maxCursorLen+1), fp, false},
		{"empty", plain, "", fp, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := tc.store.decodeCursor(tc.cursor, tc.fp, issueListAttrs, issueCheck("ws_a"))
			if tc.ok {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if d := (decoder{it: k}); d.str(attrPK) != issuePK("ws_a", "i1") || d.str(attrGSI1PK) != issueListPK("ws_a") {
					t.Errorf("decoded key %v", d.keyString())
				}
				return
			}
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("decode = %v, want store.ErrInvalid", err)
			}
		})
	}
}

// FuzzDecodeCursor: a cursor is client input. Decoding never panics, refuses with
// invalid_arguments only, and whatever it accepts lies in the caller's partition.
func FuzzDecodeCursor(f *testing.F) {
	s := New(nil, "m", "t", WithCursorSecret([]byte("fuzz")))
	fp := fingerprint("ws_a", "issues")
	good, err := s.encodeCursor(fp, issueStart("ws_a", "i1"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add("eyJ2IjoxfQ")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"f":"` + fp + `","k":{"PK":"WS#ws_b#ISSUE#x"}}`)))
	f.Fuzz(func(t *testing.T, c string) {
		k, err := s.decodeCursor(c, fp, issueListAttrs, issueCheck("ws_a"))
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("error %v, want store.ErrInvalid", err)
			}
			return
		}
		d := decoder{it: k}
		if !strings.HasPrefix(d.str(attrPK), issuePK("ws_a", "")) || d.str(attrGSI1PK) != issueListPK("ws_a") {
			t.Fatalf("accepted a key outside the partition: %v", d.keyString())
		}
	})
}

// The attribute names the store writes must be the ones the tables are declared with.
func TestKeyNamesMatchTableSpecs(t *testing.T) {
	for _, spec := range []TableSpec{Main, Tokens} {
		g, ok := spec.GSI(indexGSI1)
		if spec.PartitionKey != attrPK || spec.SortKey != attrSK || spec.TTLAttribute != attrTTL ||
			!ok || g.PartitionKey != attrGSI1PK || g.SortKey != attrGSI1SK || g.Projection != ProjectionAll {
			t.Errorf("spec %+v does not match the store's attribute names", spec)
		}
	}
	if !strings.HasPrefix(wsPK("x"), TenantPrefix) || !strings.HasPrefix(tokenPK("h"), TokenPrefix) {
		t.Error("key prefixes differ from shared/store/dynamo/tablespec.go")
	}
}

func TestValidPart(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"ws_1", true},
		{"0190a3c4-1111-7000-8000-000000000000", true},
		{"", false},
		{"a#b", false},
		{"#", false},
		{strings.Repeat("a", 513), false},
	}
	for _, tc := range tests {
		if got := validPart(tc.in); got != tc.want {
			t.Errorf("validPart(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestIsLocalEndpoint(t *testing.T) {
	tests := []struct {
		endpoint string
		want     bool
	}{
		{"http://127.0.0.1:8000", true},
		{"http://localhost:4566", true},
		{"http://[::1]:8000", true},
		{"https://dynamodb.eu-west-1.amazonaws.com", false},
		{"http://10.0.0.5:8000", false},
		{"", false},
		{"::not a url", false},
	}
	for _, tc := range tests {
		c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(tc.endpoint)})
		if tc.endpoint == "" {
			c = dynamodb.New(dynamodb.Options{Region: "us-east-1"})
		}
		if got := isLocalEndpoint(c); got != tc.want {
			t.Errorf("isLocalEndpoint(%q) = %v, want %v", tc.endpoint, got, tc.want)
		}
	}
}
