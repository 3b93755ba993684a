package confirm

import (
	"context"
	"fmt"
	"strings"
)

// KeysFromEnv loads the keyring a Lambda function seals and opens with:
// EnvKeyARN names a Secrets Manager secret (a base64 or hex 32-byte key,
// AWSPREVIOUS still opening what was sealed before a rotation; the keyring
// reloads it while the instance is warm, see SecretsKeyring), and
// EnvKeyEphemeral=true is the emulators' explicit opt-in to a key of the
// instance's own. Neither: nil, and the caller decides what that means. The MCP
// function seals with it (confirmation requestState, approval links); the OAuth
// function's approval page opens those links, so it must be given the same secret.
func KeysFromEnv(ctx context.Context, sm SecretsGetter, getenv func(string) string) (*Keyring, error) {
	arn := strings.TrimSpace(getenv(EnvKeyARN))
	switch {
	case arn != "":
		keys, err := SecretsKeyring(ctx, SecretsManagerSource(sm, arn))
		if err != nil {
			return nil, fmt.Errorf("the confirmation key secret %s: %w", EnvKeyARN, err)
		}
		return keys, nil
	case getenv(EnvKeyEphemeral) == "true":
		return EphemeralKeyring()
	}
	return nil, nil
}
