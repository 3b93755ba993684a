package lambdaenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsAPI is the Secrets Manager call a function makes at cold start.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// ReadSecret reads a secret by ARN once, at cold start: the value lives in the
// function's memory and never in its environment or the template. what names the
// secret in errors. A secret stored as binary is returned as is; an empty secret is
// an error, since every caller would fail later with a less useful one.
func ReadSecret(ctx context.Context, sm SecretsAPI, arn, what string) ([]byte, error) {
	if sm == nil {
		return nil, fmt.Errorf("read the %s: no Secrets Manager client", what)
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("read the %s: %w", what, err)
	}
	var secret []byte
	switch {
	case out.SecretString != nil:
		secret = []byte(*out.SecretString)
	case len(out.SecretBinary) > 0:
		secret = out.SecretBinary
	}
	if len(secret) == 0 {
		return nil, errors.New("the " + what + " is empty")
	}
	return secret, nil
}
