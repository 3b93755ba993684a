package mcpfn

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
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
