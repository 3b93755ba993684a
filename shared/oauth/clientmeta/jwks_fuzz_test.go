package clientmeta

import (
	"testing"
)

// FuzzParseKeySet: a published key set is refused with a reason, or yields 1 to 10
// public signing keys of a usable type.
func FuzzParseKeySet(f *testing.F) {
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`)
	f.Add(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`)
	f.Add(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`)
	f.Add(`{"keys":[],"keys":[]}`)
	f.Add(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, raw string) {
		keys, desc := ParseKeySet([]byte(raw))
		if desc != "" {
			if keys != nil {
				t.Fatalf("refused (%s) but returned keys", desc)
			}
			return
		}
		if len(keys) == 0 || len(keys) > maxKeys {
			t.Fatalf("accepted %d keys", len(keys))
		}
		for _, k := range keys {
			if !k.IsPublic() || !usableKey(k.Key) {
				t.Fatalf("accepted key %+v", k)
			}
		}
	})
}
