package confirm

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

type fakeSecrets map[string]string // stage -> value

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	v, ok := f[aws.ToString(in.VersionStage)]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no such stage")}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

func b64(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), KeySize)))
}

// TestSecretsRotation: a state sealed under the key before rotation opens after it
// (AWSPREVIOUS), and a new seal uses the new key, which the old ring cannot open.
func TestSecretsRotation(t *testing.T) {
	ctx := context.Background()
	before, err := SecretsKeyring(ctx, SecretsManagerSource(fakeSecrets{"AWSCURRENT": b64('a')}, "arn"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := SecretsKeyring(ctx, SecretsManagerSource(fakeSecrets{"AWSCURRENT": b64('b'), "AWSPREVIOUS": b64('a')}, "arn"))
	if err != nil {
		t.Fatal(err)
	}
	// The stack's generated secret is hex; the same 32 bytes are the same key.
	hexRing, err := SecretsKeyring(ctx, SecretsManagerSource(fakeSecrets{"AWSCURRENT": strings.Repeat("61", KeySize)}, "arn"))
	if err != nil {
		t.Fatal(err)
	}
	old, _, _ := before.Seal(claims(), t0)
	if _, err := hexRing.Open(old, t0); err != nil {
		t.Fatalf("hex and base64 of the same bytes are different keys: %v", err)
	}
	if _, err := after.Open(old, t0); err != nil {
		t.Fatalf("state from before rotation: %v", err)
	}
	fresh, _, _ := after.Seal(claims(), t0)
	if _, err := before.Open(fresh, t0); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("old ring opened the new key's state: %v", err)
	}
	for name, f := range map[string]fakeSecrets{
		"no current":   {"AWSPREVIOUS": b64('a')},
		"short key":    {"AWSCURRENT": base64.StdEncoding.EncodeToString([]byte("short"))},
		"not base64":   {"AWSCURRENT": "%%%"},
		"bad previous": {"AWSCURRENT": b64('a'), "AWSPREVIOUS": "%%%"},
		"short hex":    {"AWSCURRENT": strings.Repeat("ab", KeySize-1)},
		"hex and junk": {"AWSCURRENT": strings.Repeat("ab", KeySize) + "zz"},
	} {
		if _, err := SecretsKeyring(ctx, SecretsManagerSource(f, "arn")); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// barrierSource answers a stage only once want reads are in flight together, so a
// loader that reads one stage after the other never gets its first answer: it
// fails on the timeout instead, which only guards against a hung test.
type barrierSource struct {
	want   int
	all    chan struct{}
	once   sync.Once
	n      atomic.Int32
	stages map[string]string
}

func newBarrierSource(want int, stages map[string]string) *barrierSource {
	return &barrierSource{want: want, all: make(chan struct{}), stages: stages}
}

func (b *barrierSource) get(ctx context.Context, stage string) (string, bool, error) {
	if int(b.n.Add(1)) == b.want {
		b.once.Do(func() { close(b.all) })
	}
	select {
	case <-b.all:
	case <-time.After(10 * time.Second):
		return "", false, fmt.Errorf("read of %s waited alone: the stages are read one after the other", stage)
	}
	v, ok := b.stages[stage]
	return v, ok, nil
}

// TestLoadSecretKeysReadsStagesTogether: a cold start waits for one Secrets Manager
// round trip for the confirmation keys, not one per stage.
func TestLoadSecretKeysReadsStagesTogether(t *testing.T) {
	src := newBarrierSource(2, map[string]string{"AWSCURRENT": b64('b'), "AWSPREVIOUS": b64('a')})
	ring, err := SecretsKeyring(context.Background(), src.get)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(ring.set.Load().aeads); got != 2 {
		t.Fatalf("keyring holds %d keys, want the current and the previous", got)
	}
}
