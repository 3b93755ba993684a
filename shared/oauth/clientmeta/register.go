package clientmeta

import "fmt"

// ParseRegistration validates an RFC 7591 registration request body (JSON) and returns
// the client to store (no ClientID yet). allowLoopbackHTTP is always true for native
// clients per RFC 8252; web clients need https redirect URIs.
//
// Members this server does not understand are ignored, as RFC 7591 §2 requires; the
// known ones must have their registered JSON types. Errors are *Error with code
// invalid_redirect_uri (a fault in redirect_uris) or invalid_client_metadata
// (RFC 7591 §3.2.2).
func ParseRegistration(body []byte) (Client, error) {
	if len(body) > MaxRegistrationBytes {
		return Client{}, &Error{Code: CodeInvalidClientMetadata, Description: fmt.Sprintf("the registration request is larger than %d bytes", MaxRegistrationBytes)}
	}
	c, p := parseMetadata(body, fromRegistration, "")
	if p != nil {
		code := CodeInvalidClientMetadata
		if p.redirect {
			code = CodeInvalidRedirectURI
		}
		return Client{}, &Error{Code: code, Description: p.desc}
	}
	return c, nil
}

// parseDocument validates a fetched Client ID Metadata Document for clientID.
func parseDocument(clientID string, body []byte) (Client, error) {
	c, p := parseMetadata(body, fromDocument, clientID)
	if p != nil {
		return Client{}, &Error{Code: CodeInvalidClient, Description: "the client metadata document is invalid: " + p.desc}
	}
	return c, nil
}
