package lambdatest

import (
	"encoding/json"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// OAuthGolden is what the golden file of an events/oauth sample holds: the
// authorization server function's answer (status, the headers that matter, the
// body) and the audit records it wrote. Both the in-process test (events/oauth)
// and the one under the Runtime Interface Emulator (test/lambda) compare against
// the same files.
type OAuthGolden struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Body       any               `json:"body"`
	Audit      []audit.Record    `json:"audit"`
}

var oauthHeaders = []string{"Content-Type", "Www-Authenticate", "X-Request-Id", "Allow", "Cache-Control",
	"Access-Control-Allow-Origin", "Content-Security-Policy", "X-Frame-Options"}

// oauthRandom are values the server draws at random; the golden files hold a
// placeholder.
var oauthRandom = map[string]string{"client_id": "<CLIENT_ID>", "client_id_issued_at": "<UNIX>"}

// NewOAuthGolden builds the golden value of an answer and its audit records.
func NewOAuthGolden(resp events.APIGatewayProxyResponse, recs []audit.Record) OAuthGolden {
	g := OAuthGolden{StatusCode: resp.StatusCode, Headers: map[string]string{}, Audit: recs}
	for _, k := range oauthHeaders {
		if v := resp.MultiValueHeaders[k]; len(v) > 0 {
			g.Headers[k] = strings.Join(v, ", ")
		}
	}
	var body map[string]any
	if json.Unmarshal([]byte(resp.Body), &body) == nil {
		for k, p := range oauthRandom {
			if _, ok := body[k]; ok {
				body[k] = p
			}
		}
		g.Body = body
	} else {
		g.Body = resp.Body
	}
	for i := range g.Audit {
		// A record read back from the stream has [] where the one handed to the
		// sink had nil: the same record.
		if len(g.Audit[i].ScopesProvided) == 0 {
			g.Audit[i].ScopesProvided = nil
		}
		if len(g.Audit[i].ScopesRequired) == 0 {
			g.Audit[i].ScopesRequired = nil
		}
		if g.Audit[i].ClientID != "" {
			g.Audit[i].ClientID = oauthRandom["client_id"]
		}
	}
	return g
}
