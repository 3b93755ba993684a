package confirm

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

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
