package guard_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
)

// The args digest and the idempotency key are keyed HMACs: the same call gives the
// same digests under one deployment's key (records stay comparable) and unrelated
// ones under another; neither is the plain SHA-256 a guess could be checked against,
// and the key itself is not in the record.
func TestArgsAndIdempotencyKeyAreKeyedHMACs(t *testing.T) {
	w := gt.NewWorld(t)
	p, err := (&auth.Verifier{Store: w.Store}).Verify(context.Background(), w.Token(t, gt.WS, gt.Admin, auth.AllScopes...))
	if err != nil {
		t.Fatal(err)
	}
	call := func(key []byte, args string) audit.Record {
		t.Helper()
		d, err := audit.NewHMAC(key)
		if err != nil {
			t.Fatal(err)
		}
		sink := &gt.MemorySink{}
		g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, HMAC: d})
		res := g.Call(context.Background(), guard.Request{Principal: &p, Tool: "create_issue", Transport: "rest", Args: json.RawMessage(args)})
		if res.Err != nil {
			t.Fatalf("create_issue: %v", res.Err)
		}
		return res.Record
	}
	keyA, keyB := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	a1 := call(keyA, `{"title":"AAC-42","idempotency_key":"retry-1"}`)
	a2 := call(keyA, `{"idempotency_key":"retry-1","title":"AAC-42"}`) // a replay
	b := call(keyB, `{"title":"AAC-42","idempotency_key":"retry-1"}`)

	plain := sha256.Sum256([]byte(`{"idempotency_key":"retry-1","title":"AAC-42"}`))
	line, _ := audit.MarshalLine(a1)
	for _, leak := range []string{"retry-1", hex.EncodeToString(plain[:]), "args_sha256", `"idempotency_key":`} {
		if bytes.Contains(line, []byte(leak)) {
			t.Errorf("record line contains %q: %s", leak, line)
		}
	}
	if a1.EventVersion != audit.EventVersion || len(a1.ArgsHMAC) != 64 || len(a1.IdempotencyKeyHMAC) != 64 {
		t.Fatalf("record %+v, want %s with both HMACs", a1, audit.EventVersion)
	}
	if a1.ArgsHMAC != a2.ArgsHMAC || a1.IdempotencyKeyHMAC != a2.IdempotencyKeyHMAC {
		t.Error("the same call under the same key gave other digests")
	}
	if a1.ArgsHMAC == b.ArgsHMAC || a1.IdempotencyKeyHMAC == b.IdempotencyKeyHMAC {
		t.Error("another deployment's key gave the same digests")
	}
	if a1.ArgsHMAC == a1.IdempotencyKeyHMAC {
		t.Error("the two digests share a domain")
	}
	if !a2.IdempotentReplay {
		t.Error("the repeat with the same key was not a replay: the store's key changed")
	}
}
