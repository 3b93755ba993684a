package kmsemu

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// TestStart: the emulator listens on loopback only, answers the real client, and
// each server has its own database.
func TestStart(t *testing.T) {
	a, b := Start(t), Start(t)
	for _, s := range []*Server{a, b} {
		u, err := url.Parse(s.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			t.Errorf("endpoint %s is not on a loopback address", s.Endpoint)
		}
	}
	arn := a.CreateSigningKey(t)
	ctx := context.Background()
	out, err := a.Client().DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	m := out.KeyMetadata
	if m.KeySpec != kmstypes.KeySpecEccNistP256 || m.KeyUsage != kmstypes.KeyUsageTypeSignVerify || !m.Enabled {
		t.Errorf("CreateSigningKey made %s %s enabled=%v", m.KeySpec, m.KeyUsage, m.Enabled)
	}
	var nf *kmstypes.NotFoundException
	if _, err := b.Client().DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(arn)}); !errors.As(err, &nf) {
		t.Errorf("another server knows the key: %v", err)
	}
}
