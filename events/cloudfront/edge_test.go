// Package cloudfront_test runs the Lambda@Edge origin-response function
// (functions/edge/index.mjs) with Node.js on every sample CloudFront event in this
// folder and compares its answer with the golden file, and on every row of
// cases.json, the table shared/gateway's stand-in is held to as well. Regenerate the
// golden files with -update.
package cloudfront_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type edgeCase struct {
	Name    string      `json:"name"`
	Headers [][2]string `json:"headers"`
	Want    [][2]string `json:"want"`
}

type runOutput struct {
	Events map[string]json.RawMessage `json:"events"`
	Cases  map[string][][2]string     `json:"cases"`
}

// runEdge sends events and cases to run.mjs in one Node.js process. A missing node
// fails the test: the production front door's code would otherwise go untested.
func runEdge(t *testing.T, events map[string]json.RawMessage, cases []edgeCase) runOutput {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the Lambda@Edge function test needs Node.js 20 or newer")
	}
	in, err := json.Marshal(map[string]any{"events": events, "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "run.mjs")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node run.mjs: %v\n%s", err, stderr.String())
	}
	var res runOutput
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("run.mjs printed %q: %v", out, err)
	}
	return res
}

func sampleEvents(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	files, err := filepath.Glob("[0-9][0-9]-*.json")
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]json.RawMessage{}
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		events[strings.TrimSuffix(f, ".json")] = b
	}
	if len(events) == 0 {
		t.Fatal("no sample events in events/cloudfront")
	}
	return events
}

func loadCases(t *testing.T) []edgeCase {
	t.Helper()
	b, err := os.ReadFile("cases.json")
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
		t.Fatal("cases.json has no cases")
	}
	return doc.Cases
}

func headerSet(pairs [][2]string) map[string][]string {
	out := map[string][]string{}
	for _, p := range pairs {
		k := strings.ToLower(p[0])
		out[k] = append(out[k], p[1])
	}
	return out
}

func TestEdgeFunctionGoldenEvents(t *testing.T) {
	events := sampleEvents(t)
	res := runEdge(t, events, nil)
	for name := range events {
		t.Run(name, func(t *testing.T) {
			got, ok := res.Events[name]
			if !ok {
				t.Fatal("no answer")
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			golden := name + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("answer differs from %s:\n%s", golden, pretty.String())
			}
		})
	}
}

// TestEdgeFunctionGoldenInvariants checks what the golden files must say whatever
// -update wrote: a response still carrying the remapped challenge, or one that lost
// the origin's own, would be a wrong golden file accepted by regeneration.
func TestEdgeFunctionGoldenInvariants(t *testing.T) {
	for name, ev := range sampleEvents(t) {
		var in struct {
			Records []struct {
				CF struct {
					Response struct {
						Headers map[string][]struct{ Key, Value string } `json:"headers"`
					} `json:"response"`
				} `json:"cf"`
			} `json:"Records"`
		}
		if err := json.Unmarshal(ev, &in); err != nil || len(in.Records) != 1 {
			t.Fatalf("%s: not an origin-response event: %v", name, err)
		}
		b, err := os.ReadFile(name + ".golden.json")
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Headers map[string][]struct{ Key, Value string } `json:"headers"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		inH := in.Records[0].CF.Response.Headers
		if _, ok := out.Headers["x-amzn-remapped-www-authenticate"]; ok {
			t.Errorf("%s: the golden answer still has the remapped challenge", name)
		}
		want := inH["www-authenticate"]
		if len(want) == 0 {
			want = inH["x-amzn-remapped-www-authenticate"]
		}
		got := out.Headers["www-authenticate"]
		if len(got) != len(want) {
			t.Fatalf("%s: WWW-Authenticate = %v, want the values of %v", name, got, want)
		}
		restored := len(inH["www-authenticate"]) == 0
		for i := range want {
			if got[i].Value != want[i].Value || (restored && got[i].Key != "WWW-Authenticate") {
				t.Errorf("%s: WWW-Authenticate[%d] = %+v, want value %q", name, i, got[i], want[i].Value)
			}
		}
	}
}

func TestEdgeFunctionCases(t *testing.T) {
	cases := loadCases(t)
	res := runEdge(t, nil, cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, ok := res.Cases[c.Name]
			if !ok {
				t.Fatal("no answer")
			}
			gs, ws := headerSet(got), headerSet(c.Want)
			if len(gs) != len(ws) {
				t.Errorf("headers = %v, want %v", gs, ws)
			}
			for k, w := range ws {
				if !slices.Equal(gs[k], w) {
					t.Errorf("%s = %q, want %q (all: %v)", k, gs[k], w, gs)
				}
			}
		})
	}
}
