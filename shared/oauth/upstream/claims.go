package upstream

import (
	"encoding/json"
	"fmt"
)

// claims are the parts of an ID token or UserInfo response the identity is made of.
type claims struct {
	Subject, Email, Name, AuthorizedParty string
	EmailVerified                         bool
}

// decodeClaims reads a JSON claims object from the provider.
func decodeClaims(data []byte) (claims, error) {
	var w struct {
		Subject         string          `json:"sub"`
		Email           string          `json:"email"`
		EmailVerified   json.RawMessage `json:"email_verified"`
		Name            string          `json:"name"`
		AuthorizedParty string          `json:"azp"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return claims{}, err
	}
	verified, err := parseEmailVerified(w.EmailVerified)
	if err != nil {
		return claims{}, err
	}
	return claims{
		Subject:         w.Subject,
		Email:           w.Email,
		Name:            w.Name,
		AuthorizedParty: w.AuthorizedParty,
		EmailVerified:   verified,
	}, nil
}

// parseEmailVerified accepts a JSON boolean and, because Cognito and some others send
// it so, the strings "true" and "false". Absent and null mean not verified. Anything
// else is an error rather than a guess: the claim decides whether an e-mail may name
// an account.
func parseEmailVerified(raw json.RawMessage) (bool, error) {
	if raw == nil {
		return false, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, fmt.Errorf("email_verified: %w", err)
	}
	switch v := v.(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("email_verified: unsupported value %.40s", raw)
}

// checkAuthorizedParty applies OpenID Connect Core 3.1.3.7 (items 4 and 5), which
// go-oidc leaves to the caller: an ID token for several audiences must name us as its
// authorized party, and a named authorized party must be us.
func checkAuthorizedParty(aud []string, azp, clientID string) error {
	if azp != "" && azp != clientID {
		return fmt.Errorf("authorized party %q is not this client", azp)
	}
	if len(aud) > 1 && azp == "" {
		return fmt.Errorf("token for %d audiences has no authorized party", len(aud))
	}
	return nil
}
