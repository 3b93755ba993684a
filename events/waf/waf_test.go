// Package waf_test feeds every sample WAF log batch in this folder (CloudWatch Logs
// subscription data of the web ACL's aws-waf-logs-* group, decoded) through the
// audit forwarder and compares the records it makes with the golden file next to
// each sample. Records from WAF logs are fully determined by the log (event ids are
// derived from it, timestamps are WAF's), so goldens are compared byte for byte.
// Regenerate with -update.
package waf_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/functions/forwarder/forwarderfn"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The group the samples come from, as the stack names it for stack "aacmcp".
const wafGroup = "aws-waf-logs-aacmcp"

func TestSampleWAFLogs(t *testing.T) {
	f := forwarderfn.New(forwarderfn.Config{
		Tools:             catalog.New(catalog.Deps{}),
		FunctionLogGroups: []string{"/aws/lambda/mcp"},
		AccessLogGroup:    "/aws/apigateway/access",
		WAFLogGroup:       wafGroup,
		Logger:            slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	// *-frontdoor-* samples are the regional web ACL's behind the CloudFront front
	// door, where the stack sets AACMCP_TRUST_VIEWER_ADDRESS for the forwarder.
	front := forwarderfn.New(forwarderfn.Config{
		Tools:              catalog.New(catalog.Deps{}),
		FunctionLogGroups:  []string{"/aws/lambda/mcp"},
		AccessLogGroup:     "/aws/apigateway/access",
		WAFLogGroup:        wafGroup,
		TrustViewerAddress: true,
		Logger:             slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".golden.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(path, ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var data events.CloudwatchLogsData
			if err := json.Unmarshal(raw, &data); err != nil {
				t.Fatal(err)
			}
			if data.LogGroup != wafGroup {
				t.Fatalf("sample's logGroup %q, want %q", data.LogGroup, wafGroup)
			}
			fw := f
			if strings.Contains(name, "-frontdoor") {
				fw = front
			}
			recs := fw.Records(data)
			for _, r := range recs {
				if err := r.Validate(); err != nil {
					t.Errorf("invalid record: %v", err)
				}
				if r.Reason != "waf_blocked" || r.Outcome != audit.OutcomeDenied || r.WorkspaceID != "" {
					t.Errorf("record %+v: want a denied waf_blocked record naming no workspace", r)
				}
			}
			if recs == nil {
				recs = []audit.Record{}
			}
			got, err := json.MarshalIndent(map[string]any{"records": recs}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			gp := name + ".golden.json"
			if *update {
				if err := os.WriteFile(gp, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(gp)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("records differ from %s (run with -update if intended)\n--- got\n%s", gp, got)
			}
		})
	}
	if n == 0 {
		t.Fatal("no sample WAF logs")
	}
}
