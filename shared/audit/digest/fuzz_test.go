package digest

import (
	"bytes"
	"testing"
)

func sampleDigest() *Digest {
	return &Digest{
		DigestVersion: Version,
		WindowStart:   "2026-12-01T10:00:00Z",
		WindowEnd:     "2026-12-01T11:00:00Z",
		Objects: []Object{{
			Path: "audit/dt=2026-12-01/hour=10/compacted-01J.parquet", SHA256: Hash([]byte("x")),
			Size: 1, Records: 2, FirstTimestamp: "2026-12-01T10:00:01.000Z", LastTimestamp: "2026-12-01T10:59:59.000Z",
		}},
		PreviousPath:      "audit-digest/dt=2026-12-01/hour=09/20261201T090000.000000000Z_20261201T100000.000000000Z.json",
		PreviousSHA256:    Hash([]byte("prev")),
		PreviousSignature: "c2ln",
		KeyID:             "ed25519:00",
		Algorithm:         AlgEd25519,
		Signature:         "c2ln",
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts is exactly the canonical
// encoding of what it returns (one digest, one byte form).
func FuzzDecode(f *testing.F) {
	f.Add(Encode(sampleDigest()))
	empty := sampleDigest()
	empty.Objects, empty.PreviousPath, empty.PreviousSHA256, empty.PreviousSignature = []Object{}, "", "", ""
	f.Add(Encode(empty))
	f.Add([]byte(`{"digest_version":"1","digest_version":"1"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(Encode(d), b) {
			t.Fatalf("accepted a non-canonical form:\n%s\n%s", b, Encode(d))
		}
		if _, err := Decode(SignedBytes(d)); err == nil {
			t.Fatal("a digest without a signature decoded")
		}
	})
}

func TestDecodeRefusesOtherForms(t *testing.T) {
	good := Encode(sampleDigest())
	if _, err := Decode(good); err != nil {
		t.Fatalf("canonical digest refused: %v", err)
	}
	dup := bytes.Replace(good, []byte(`{"digest_version":"1",`), []byte(`{"digest_version":"1","digest_version":"1",`), 1)
	spaced := bytes.Replace(good, []byte(`,"objects"`), []byte(`, "objects"`), 1)
	unknown := bytes.Replace(good, []byte(`{"digest_version":"1",`), []byte(`{"digest_version":"1","extra":1,`), 1)
	outside := bytes.Replace(good, []byte(`audit/dt=2026-12-01/hour=10/compacted-01J.parquet`), []byte(`audit/dt=2026-12-01/hour=10/../../x`), 1)
	for name, b := range map[string][]byte{"duplicate": dup, "spacing": spaced, "unknown": unknown, "path": outside, "trailing": append(bytes.Clone(good), '{', '}')} {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
