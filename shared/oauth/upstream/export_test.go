package upstream

import "github.com/coreos/go-oidc/v3/oidc"

// VerifyForAudience makes p verify ID tokens as if it were clientID, so a test can
// present it a token the provider issued to another client.
func VerifyForAudience(p *Provider, clientID string) {
	p.verifier = p.oidc.Verifier(&oidc.Config{ClientID: clientID})
}
