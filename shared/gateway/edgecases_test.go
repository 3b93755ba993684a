package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/gateway"
)

// edgeCase is one row of events/cloudfront/cases.json, the table the Lambda@Edge
// function (functions/edge/index.mjs, run by events/cloudfront's test) is held to as
// well: the stand-in and the production front door cannot drift apart.
type edgeCase struct {
	Name    string      `json:"name"`
	Headers [][2]string `json:"headers"`
	Want    [][2]string `json:"want"`
}

func loadEdgeCases(t *testing.T) []edgeCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "cloudfront", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []edgeCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("events/cloudfront/cases.json has no cases")
	}
	return doc.Cases
}

// headerSet is a header multimap keyed by lower-case name, values in order: how
// both implementations' answers are compared.
func headerSet(pairs [][2]string) map[string][]string {
	out := map[string][]string{}
	for _, p := range pairs {
		k := strings.ToLower(p[0])
		out[k] = append(out[k], p[1])
	}
	return out
}

func TestFrontDoorEdgeCases(t *testing.T) {
	for _, c := range loadEdgeCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			origin := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for _, h := range c.Headers {
					w.Header().Add(h[0], h[1])
				}
				w.WriteHeader(http.StatusForbidden)
			})
			api := httptest.NewServer(origin)
			defer api.Close()
			u, err := url.Parse(api.URL)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			gateway.FrontDoor(gateway.Distribution{Origin: u}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
			var got [][2]string
			for name, vs := range rec.Result().Header {
				for _, v := range vs {
					got = append(got, [2]string{name, v})
				}
			}
			// Only the names the case is about: the stand-in may add headers of its
			// own (as CloudFront adds Via and X-Amz-Cf-Id), which the table does not model.
			gs, ws := headerSet(got), headerSet(c.Want)
			names := []string{"www-authenticate", "x-amzn-remapped-www-authenticate"}
			for k := range headerSet(c.Headers) {
				names = append(names, k)
			}
			for k := range ws {
				names = append(names, k)
			}
			for _, k := range names {
				if !slices.Equal(gs[k], ws[k]) {
					t.Errorf("%s = %q, want %q (all: %v)", k, gs[k], ws[k], gs)
				}
			}
		})
	}
}
