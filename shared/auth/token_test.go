package auth

import (
	"hash/crc32"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

func TestMintFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		secret, hash, err := Mint()
		if err != nil {
			t.Fatalf("Mint: %v", err)
		}
		if len(secret) != TokenLen || !strings.HasPrefix(secret, TokenPrefix) {
			t.Fatalf("secret %q: want %d chars starting %q", secret, TokenLen, TokenPrefix)
		}
		if !ValidFormat(secret) {
			t.Fatalf("minted secret %q fails its own checksum", secret)
		}
		if hash != Hash(secret) || len(hash) != 64 {
			t.Fatalf("hash %q is not the hex SHA-256 of the secret", hash)
		}
		if seen[secret] {
			t.Fatalf("Mint repeated %q", secret)
		}
		seen[secret] = true
	}
}

func TestHashKnownValue(t *testing.T) {
	// SHA-256("abc"): the stored form must be plain hex SHA-256, which the DynamoDB
	// backend and the authorizer compute too.
	if got := Hash("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("Hash(abc) = %s", got)
	}
}

func TestNewTokenID(t *testing.T) {
	a, b := NewTokenID(), NewTokenID()
	if !strings.HasPrefix(a, "tok_") || len(a) != 4+26 || a == b {
		t.Errorf("NewTokenID = %q, %q", a, b)
	}
}

func TestParseBearer(t *testing.T) {
	secret, _, err := Mint()
	if err != nil {
		t.Fatal(err)
	}
	// flip changes one character of the random part to another valid base62 one.
	flip := func(s string, i int) string {
		c := byte('a')
		if s[i] == 'a' {
			c = 'b'
		}
		return s[:i] + string(c) + s[i+1:]
	}
	tests := []struct {
		name   string
		header string
		ok     bool
		reason Reason
	}{
		{"canonical", "Bearer " + secret, true, ""},
		{"lower-case scheme", "bearer " + secret, true, ""},
		{"upper-case scheme", "BEARER " + secret, true, ""},
		{"extra spaces", "  Bearer   " + secret + "  ", true, ""},
		{"empty", "", false, ReasonMissing},
		{"blank", "   ", false, ReasonMissing},
		{"scheme only", "Bearer", false, ReasonMalformed},
		{"scheme and space", "Bearer ", false, ReasonMalformed},
		{"basic scheme", "Basic " + secret, false, ReasonMalformed},
		{"no scheme", secret, false, ReasonMalformed},
		{"two tokens", "Bearer " + secret + " " + secret, false, ReasonMalformed},
		{"tab inside", "Bearer " + secret[:10] + "\t" + secret[10:], false, ReasonMalformed},
		{"wrong prefix", "Bearer xyz_" + secret[4:], false, ReasonMalformed},
		{"upper-case prefix", "Bearer AAC_" + secret[4:], false, ReasonMalformed},
		{"wrong checksum", "Bearer " + flip(secret, len(secret)-1), false, ReasonMalformed},
		{"typo in random part", "Bearer " + flip(secret, 10), false, ReasonMalformed},
		{"truncated", "Bearer " + secret[:len(secret)-1], false, ReasonMalformed},
		{"too long", "Bearer " + secret + "0", false, ReasonMalformed},
		{"non-base62", "Bearer " + secret[:10] + "-" + secret[11:], false, ReasonMalformed},
		{"non-ASCII", "Bearer " + secret[:10] + "é" + secret[12:], false, ReasonMalformed},
	}
	for _, tc := range tests {
		got, err := ParseBearer(tc.header)
		if tc.ok {
			if err != nil || got != secret {
				t.Errorf("%s: ParseBearer = %q, %v; want the secret", tc.name, got, err)
			}
			continue
		}
		if got != "" {
			t.Errorf("%s: returned %q with an error", tc.name, got)
		}
		checkRejected(t, tc.name, err, tc.reason, secret)
	}
}

// checkRejected asserts the uniform public shape of a token rejection, its private
// reason, and that the secret appears nowhere in the error's text.
func checkRejected(t *testing.T, name string, err error, reason Reason, secret string) {
	t.Helper()
	ae := apperr.As(err)
	if ae == nil || ae.Code != apperr.InvalidToken || ae.Message != PublicMessage {
		t.Errorf("%s: error %v, want invalid_token with the public message", name, err)
		return
	}
	if got := RejectReason(err); got != reason {
		t.Errorf("%s: reason %q, want %q", name, got, reason)
	}
	leak := secret != "" && strings.Contains(err.Error(), secret)
	if len(secret) >= TokenLen { // a fragment of the random part is a leak too
		leak = leak || strings.Contains(err.Error(), secret[len(TokenPrefix):len(TokenPrefix)+8])
	}
	if leak {
		t.Errorf("%s: error text %q contains the secret", name, err.Error())
	}
}

func FuzzParseBearer(f *testing.F) {
	secret, _, err := Mint()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "Bearer " + secret, "bearer " + secret, "Bearer", "Basic abc", "Bearer aac_", "Bearer " + secret + " x", "Bearer \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got, err := ParseBearer(header)
		if err != nil {
			if got != "" {
				t.Fatalf("secret %q returned with error", got)
			}
			if ae := apperr.As(err); ae.Code != apperr.InvalidToken || ae.Message != PublicMessage {
				t.Fatalf("error %v is not the uniform invalid_token", err)
			}
			if RejectReason(err) == "" {
				t.Fatalf("rejection without a reason: %v", err)
			}
			return
		}
		if !ValidFormat(got) || !strings.Contains(header, got) {
			t.Fatalf("accepted %q from %q", got, header)
		}
	})
}

// TestChecksumMatchesCRC32: the table loop computes hash/crc32's IEEE checksum, so
// every secret minted before it still validates and every new one validates
// wherever the package's earlier code runs (the authorizer of a previous deploy).
func TestChecksumMatchesCRC32(t *testing.T) {
	reference := func(body string) string {
		sum := crc32.ChecksumIEEE([]byte(body))
		c := make([]byte, checksumLen)
		for i := checksumLen - 1; i >= 0; i-- {
			c[i] = base62Alphabet[sum%62]
			sum /= 62
		}
		return string(c)
	}
	bodies := []string{"", "a", TokenPrefix, TokenPrefix + strings.Repeat("0", randomLen),
		TokenPrefix + strings.Repeat("z", randomLen), "\x00\xff\x80", strings.Repeat("ab", 300)}
	for range 100 {
		secret, _, err := Mint()
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, secret[:len(secret)-checksumLen])
	}
	for _, body := range bodies {
		got := checksum(body)
		if want := reference(body); string(got[:]) != want {
			t.Errorf("checksum(%q) = %s, want %s", body, got[:], want)
		}
		if string(appendChecksum([]byte(body))) != body+reference(body) {
			t.Errorf("appendChecksum(%q) disagrees with the reference", body)
		}
	}
}
