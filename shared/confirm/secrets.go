package confirm

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// SecretsGetter is the one Secrets Manager call the key needs.
type SecretsGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretsManagerSource reads the version stages of the secret arn. A stage the
// secret does not have (AWSPREVIOUS before the first rotation) is ok == false.
//
// Secrets Manager rather than a KMS-derived key: rotation is the service's own
// (AWSCURRENT/AWSPREVIOUS), the previous key stays readable by stage without the
// server keeping state, and the Lambda already reads the audit HMAC key this way.
func SecretsManagerSource(sm SecretsGetter, arn string) SecretSource {
	arn = strings.TrimSpace(arn)
	return func(ctx context.Context, stage string) (string, bool, error) {
		out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
			SecretId: aws.String(arn), VersionStage: aws.String(stage),
		})
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) && stage != "AWSCURRENT" {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return aws.ToString(out.SecretString), true, nil
	}
}
