package mcpfn

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// stagedSecrets is one secret with its version stages; a stage it lacks is the
// ResourceNotFoundException Secrets Manager answers.
type stagedSecrets struct {
	arn    string
	stages map[string]string
	err    error
}

func (s stagedSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if s.err != nil {
		return nil, s.err
	}
	v, ok := s.stages[aws.ToString(in.VersionStage)]
	if aws.ToString(in.SecretId) != s.arn || !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("no such version")}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

func newSecret(t *testing.T) (string, *confirm.Keyring) {
	t.Helper()
	b := make([]byte, confirm.KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	s := base64.StdEncoding.EncodeToString(b)
	ring, err := confirm.SecretsKeyring(context.Background(), func(context.Context, string) (string, bool, error) { return s, true, nil })
	if err != nil {
		t.Fatal(err)
	}
	return s, ring
}

func TestConfirmKeys(t *testing.T) {
	const arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:confirm-AbCdEf"
	cur, curRing := newSecret(t)
	prev, prevRing := newSecret(t)
	now := time.Now()
	claims := confirm.Claims{Workspace: "acme", User: "ada", Principal: "tok", Tool: "delete_issue", ArgsDigest: "d", ItemVersion: "1"}

	tests := []struct {
		name    string
		env     map[string]string
		sm      stagedSecrets
		wantNil bool
		wantErr bool
		// opens: states sealed by these rings open with the loaded one.
		opens, refuses []*confirm.Keyring
	}{
		{name: "neither variable", env: map[string]string{}, wantNil: true},
		{name: "ephemeral", env: map[string]string{confirm.EnvKeyEphemeral: "true"}, refuses: []*confirm.Keyring{curRing}},
		{name: "secret, never rotated", env: map[string]string{confirm.EnvKeyARN: arn},
			sm: stagedSecrets{arn: arn, stages: map[string]string{"AWSCURRENT": cur}}, opens: []*confirm.Keyring{curRing}, refuses: []*confirm.Keyring{prevRing}},
		{name: "secret after a rotation", env: map[string]string{confirm.EnvKeyARN: arn, confirm.EnvKeyEphemeral: "true"},
			sm: stagedSecrets{arn: arn, stages: map[string]string{"AWSCURRENT": cur, "AWSPREVIOUS": prev}}, opens: []*confirm.Keyring{curRing, prevRing}},
		{name: "secret without a current version", env: map[string]string{confirm.EnvKeyARN: arn},
			sm: stagedSecrets{arn: arn, stages: map[string]string{"AWSPREVIOUS": prev}}, wantErr: true},
		{name: "secret not a key", env: map[string]string{confirm.EnvKeyARN: arn},
			sm: stagedSecrets{arn: arn, stages: map[string]string{"AWSCURRENT": "not base64!"}}, wantErr: true},
		{name: "Secrets Manager unreachable", env: map[string]string{confirm.EnvKeyARN: arn},
			sm: stagedSecrets{err: errors.New("dial tcp: connection refused")}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ring, err := ConfirmKeys(context.Background(), tc.sm, func(k string) string { return tc.env[k] })
			if (err != nil) != tc.wantErr || (ring == nil) != (tc.wantNil || tc.wantErr) {
				t.Fatalf("ring %v, err %v", ring, err)
			}
			for i, r := range append(append([]*confirm.Keyring{}, tc.opens...), tc.refuses...) {
				state, _, err := r.Seal(claims, now)
				if err != nil {
					t.Fatal(err)
				}
				_, err = ring.Open(state, now)
				if want := i < len(tc.opens); (err == nil) != want {
					t.Errorf("state of ring %d: open err %v, want opened %v", i, err, want)
				}
			}
		})
	}
}

// barrierSecrets answers once want reads are in flight together: a cold start that
// read its secrets one after the other never gets its first answer and fails on the
// timeout, which only guards against a hung test.
type barrierSecrets struct {
	stagedSecrets
	hmacARN, hmacKey string
	want             int32
	n                atomic.Int32
	all              chan struct{}
	once             sync.Once
}

func (b *barrierSecrets) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opt ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if b.n.Add(1) == b.want {
		b.once.Do(func() { close(b.all) })
	}
	select {
	case <-b.all:
	case <-time.After(10 * time.Second):
		return nil, errors.New("a secret was read alone: the cold start reads its secrets one after the other")
	}
	if aws.ToString(in.SecretId) == b.hmacARN {
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(b.hmacKey)}, nil
	}
	return b.stagedSecrets.GetSecretValue(ctx, in, opt...)
}

// TestReadKeysTogether: the audit HMAC key and both stages of the confirmation key
// are three Secrets Manager reads that the cold start waits for together.
func TestReadKeysTogether(t *testing.T) {
	const confirmARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:confirm-AbCdEf"
	const hmacARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hmac-AbCdEf"
	cur, _ := newSecret(t)
	prev, _ := newSecret(t)
	sm := &barrierSecrets{
		stagedSecrets: stagedSecrets{arn: confirmARN, stages: map[string]string{"AWSCURRENT": cur, "AWSPREVIOUS": prev}},
		hmacARN:       hmacARN, hmacKey: strings.Repeat("ab", 32), want: 3, all: make(chan struct{}),
	}
	env := map[string]string{EnvHMACKeySecretARN: hmacARN, confirm.EnvKeyARN: confirmARN}
	key, keys, err := readKeys(context.Background(), sm, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 32 || keys == nil {
		t.Fatalf("got a %d-byte HMAC key and keyring %v, want 32 bytes and a keyring", len(key), keys)
	}
}
