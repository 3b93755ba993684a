package catalog

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

var update = flag.Bool("update", false, "rewrite testdata/toolsnaps from the catalog")

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestCatalogInventory holds every tool, whatever its name, to the rules each must
// follow; the spec's own facts about its eleven tools are TestCatalogMatchesSpecTable's.
func TestCatalogInventory(t *testing.T) {
	cat := New(Deps{})
	tools := cat.Tools()
	if len(tools) == 0 {
		t.Fatal("the catalog has no tools")
	}
	seen := map[string]bool{}
	for _, tool := range tools {
		t.Run(tool.Name, func(t *testing.T) {
			if seen[tool.Name] {
				t.Errorf("duplicate tool name")
			}
			seen[tool.Name] = true
			if !snakeCase.MatchString(tool.Name) || len(tool.Name) > 64 {
				t.Errorf("name is not snake_case of at most 64 characters")
			}
			if strings.TrimSpace(tool.Title) == "" || len(tool.Description) < 40 {
				t.Errorf("title %q / description %q: both must say something", tool.Title, tool.Description)
			}
			a := tool.Annotations
			if a.ReadOnly && a.Destructive {
				t.Errorf("read-only and destructive at once")
			}
			// docs/architecture.md section 2: the tools that are neither read-only nor
			// idempotent take an idempotency_key, so a client may retry them.
			idemKey := !a.ReadOnly && !a.Idempotent
			if len(tool.Scopes) == 0 {
				t.Errorf("no scope: every tool needs at least one")
			}
			for _, s := range tool.Scopes {
				if !slices.Contains(auth.AllScopes, s) {
					t.Errorf("scope %q is not in auth.AllScopes", s)
				}
			}

			// The read-only invariant, structurally: a read-only tool has only a Reader
			// handler, every other tool only a Writer handler.
			if tool.Annotations.ReadOnly {
				if tool.Read == nil || tool.Write != nil {
					t.Errorf("read-only tool must have Read and no Write handler")
				}
			} else if tool.Write == nil || tool.Read != nil {
				t.Errorf("mutating tool must have Write and no Read handler")
			}
			if tool.ResourceArg != "" {
				if _, ok := schemaProps(t, tool.InputSchema)[tool.ResourceArg]; !ok {
					t.Errorf("ResourceArg %q is not an argument of the input schema", tool.ResourceArg)
				}
			}

			if tool.AcceptsIdempotencyKey() != idemKey {
				t.Errorf("AcceptsIdempotencyKey = %v, want %v", tool.AcceptsIdempotencyKey(), idemKey)
			}
			props := schemaProps(t, tool.InputSchema)
			if _, ok := props["idempotency_key"]; ok != idemKey {
				t.Errorf("idempotency_key in input schema = %v, want %v", ok, idemKey)
			}
			if idemKey && !strings.Contains(tool.Description, "idempotency_key") {
				t.Errorf("description of a non-idempotent tool must tell the model about idempotency_key")
			}

			_, hasConfirm := props["confirm"]
			if hasConfirm != a.Destructive {
				t.Errorf("confirm in input schema = %v, want %v", hasConfirm, a.Destructive)
			}
			if a.Destructive {
				var c any
				if err := json.Unmarshal(props["confirm"], &c); err != nil {
					t.Fatal(err)
				}
				m, _ := c.(map[string]any)
				if m["type"] != "boolean" || m["const"] != true {
					t.Errorf(`confirm schema = %s, want {"type":"boolean","const":true}`, props["confirm"])
				}
				if !slices.Contains(schemaRequired(t, tool.InputSchema), "confirm") {
					t.Errorf("confirm is not required")
				}
				if !strings.Contains(tool.Description, "confirm: true") {
					t.Errorf("description of a destructive tool must say confirm: true is needed")
				}
			}

			found, ok := cat.Lookup(tool.Name)
			if !ok || found.Name != tool.Name || !bytes.Equal(found.InputSchema, tool.InputSchema) {
				t.Errorf("Lookup(%q) = %v, %v", tool.Name, found.Name, ok)
			}
		})
	}
	if _, ok := cat.Lookup("drop_database"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
	if _, ok := cat.Lookup("LIST_ISSUES"); ok {
		t.Error("Lookup is not exact")
	}
}

func TestToolsReturnsACopy(t *testing.T) {
	cat := New(Deps{})
	a := cat.Tools()
	a[0] = Tool{Name: "changed"}
	if cat.Tools()[0].Name != "list_issues" {
		t.Error("modifying the slice Tools returned changed the catalog")
	}
}

// TestEnumsMatchStore keeps the schema enums and the store's lists in step.
func TestEnumsMatchStore(t *testing.T) {
	tool, _ := New(Deps{}).Lookup("create_issue")
	props := schemaProps(t, tool.InputSchema)
	for field, want := range map[string][]string{"status": store.Statuses, "priority": store.Priorities} {
		var s struct {
			Enum []string `json:"enum"`
		}
		if err := json.Unmarshal(props[field], &s); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Enum, want) {
			t.Errorf("%s enum = %v, store has %v", field, s.Enum, want)
		}
	}
}

func TestSchemasCompile(t *testing.T) {
	for _, tool := range New(Deps{}).Tools() {
		t.Run(tool.Name, func(t *testing.T) {
			compileSchema(t, tool.Name+"/input", tool.InputSchema)
			compileSchema(t, tool.Name+"/output", tool.OutputSchema)

			var in any
			if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
				t.Fatal(err)
			}
			if n := checkClosedObjects(t, "#", in); n == 0 {
				t.Errorf("input schema has no object schema")
			}
			var out map[string]any
			if err := json.Unmarshal(tool.OutputSchema, &out); err != nil {
				t.Fatal(err)
			}
			if out["type"] != "object" {
				t.Errorf("output schema type = %v, want object (MCP structuredContent is an object)", out["type"])
			}
			if _, ok := out["$schema"]; ok {
				t.Errorf("output schema names a dialect; 2020-12 is MCP's default")
			}
		})
	}
}

// checkClosedObjects fails for every object schema under v that does not set
// additionalProperties:false, and returns how many object schemas it saw.
func checkClosedObjects(t *testing.T, path string, v any) int {
	t.Helper()
	n := 0
	switch x := v.(type) {
	case map[string]any:
		isObject := x["type"] == "object"
		if types, ok := x["type"].([]any); ok {
			isObject = slices.Contains(types, any("object"))
		}
		if isObject || x["properties"] != nil {
			n++
			if x["additionalProperties"] != false {
				t.Errorf("%s: object schema without additionalProperties:false", path)
			}
		}
		for k, child := range x {
			n += checkClosedObjects(t, path+"/"+k, child)
		}
	case []any:
		for i, child := range x {
			n += checkClosedObjects(t, fmt.Sprintf("%s/%d", path, i), child)
		}
	}
	return n
}

// TestInputSchemaBehaviour checks that the schemas say what the spec means: the guard
// rejects these as invalid_arguments (or, for confirm, destructive_flag_missing first).
func TestInputSchemaBehaviour(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	labels := func(n int) string {
		l := make([]string, n)
		for i := range l {
			l[i] = fmt.Sprintf("%q", fmt.Sprint("l", i))
		}
		return "[" + strings.Join(l, ",") + "]"
	}
	const uuid = "550e8400-e29b-41d4-a716-446655440000"
	tests := []struct {
		tool, args string
		valid      bool
	}{
		{"delete_issue", `{"issue_id":"` + uuid + `","confirm":true}`, true},
		{"delete_issue", `{"issue_id":"` + uuid + `","confirm":"true"}`, false},
		{"delete_issue", `{"issue_id":"` + uuid + `","confirm":1}`, false},
		{"delete_issue", `{"issue_id":"` + uuid + `","confirm":false}`, false},
		{"delete_issue", `{"issue_id":"` + uuid + `"}`, false},
		{"delete_comment", `{"comment_id":"01JQ3Z7R6W7YV1T0B3Q6Y2K9ZC","confirm":true}`, true},
		{"delete_comment", `{"comment_id":"01JQ3Z7R6W7YV1T0B3Q6Y2K9ZC"}`, false},
		{"delete_comment", `{"comment_id":"a b","confirm":true}`, false},
		{"get_issue", `{"issue_id":"AAC-42"}`, true},
		{"get_issue", `{"issue_id":"aac-42"}`, true},
		{"get_issue", `{"issue_id":"` + uuid + `"}`, true},
		{"get_issue", `{"issue_id":"AAC-042"}`, false},
		{"get_issue", `{"issue_id":"not an id"}`, false},
		{"get_issue", `{"issue_id":42}`, false},
		{"get_issue", `{}`, false},
		{"get_issue", `{"issue_id":"AAC-1","extra":1}`, false},
		{"list_issues", `{}`, true},
		{"list_issues", `{"limit":100,"status":"in_progress"}`, true},
		{"list_issues", `{"limit":0}`, false},
		{"list_issues", `{"limit":101}`, false},
		{"list_issues", `{"limit":2.5}`, false},
		{"list_issues", `{"status":"blocked"}`, false},
		{"list_issues", `{"workspace_id":"other"}`, false},
		{"dashboard_usage_daily", `{"from":"2026-01-01","to":"2026-01-31"}`, true},
		{"dashboard_usage_daily", `{"from":"2026-1-1"}`, false},
		{"create_issue", `{"title":"t","labels":["a","a"],"priority":"urgent","idempotency_key":"k"}`, true},
		{"create_issue", `{"title":"` + long(256) + `"}`, true},
		{"create_issue", `{"title":"` + long(257) + `"}`, false},
		{"create_issue", `{"title":""}`, false},
		{"create_issue", `{"title":"t","description":"` + long(65537) + `"}`, false},
		{"create_issue", `{"title":"t","labels":` + labels(20) + `}`, true},
		{"create_issue", `{"title":"t","labels":` + labels(21) + `}`, false},
		{"create_issue", `{"title":"t","labels":["` + long(65) + `"]}`, false},
		{"create_issue", `{"title":"t","idempotency_key":""}`, false},
		{"create_issue", `{"title":"t","idempotency_key":"` + long(129) + `"}`, false},
		{"create_issue", `{"title":"t","priority":"critical"}`, false},
		{"update_issue", `{"issue_id":"AAC-1","status":"done","expected_version":3}`, true},
		{"update_issue", `{"issue_id":"AAC-1","expected_version":0}`, false},
		{"update_issue", `{"issue_id":"AAC-1","assignee":"u"}`, false},
		{"comment_issue", `{"issue_id":"AAC-1","body":"hi"}`, true},
		{"comment_issue", `{"issue_id":"AAC-1","body":""}`, false},
		{"comment_issue", `{"issue_id":"AAC-1","body":"` + long(65537) + `"}`, false},
		{"assign_issue_to_agent", `{"issue_id":"AAC-1","agent_id":"agent-1"}`, true},
		{"assign_issue_to_agent", `{"issue_id":"AAC-1"}`, false},
		{"trigger_autopilot", `{"issue_id":"AAC-1","instructions":"` + long(8192) + `"}`, true},
		{"trigger_autopilot", `{"issue_id":"AAC-1","instructions":"` + long(8193) + `"}`, false},
	}
	cat := New(Deps{})
	compiled := map[string]*jsonschema.Schema{}
	for _, tc := range tests {
		name := tc.tool + " " + tc.args
		if len(name) > 100 {
			name = name[:100]
		}
		t.Run(name, func(t *testing.T) {
			tool, ok := cat.Lookup(tc.tool)
			if !ok {
				t.Fatalf("no tool %q", tc.tool)
			}
			sch := compiled[tc.tool]
			if sch == nil {
				sch = compileSchema(t, tc.tool, tool.InputSchema)
				compiled[tc.tool] = sch
			}
			err := sch.Validate(mustInstance(t, tc.args))
			if (err == nil) != tc.valid {
				t.Errorf("valid = %v, want %v (%v)", err == nil, tc.valid, err)
			}
		})
	}
}

func TestResourceID(t *testing.T) {
	cat := New(Deps{})
	tests := []struct{ tool, args, want string }{
		{"get_issue", `{"issue_id":"AAC-7"}`, "AAC-7"},
		{"delete_issue", `{"issue_id":"AAC-7","confirm":true}`, "AAC-7"},
		{"delete_comment", `{"comment_id":"c1","confirm":"true"}`, "c1"},
		{"comment_issue", `{"issue_id":"AAC-7","body":"x"}`, "AAC-7"},
		{"trigger_autopilot", `{"issue_id":"AAC-7"}`, "AAC-7"},
		{"list_issues", `{"status":"open"}`, ""},
		{"create_issue", `{"title":"x"}`, ""},
		{"get_issue", `{"issue_id":7}`, ""},
		{"get_issue", `{"issue_id":null}`, ""},
		{"get_issue", `{"issue_id":["AAC-7"]}`, ""},
		{"get_issue", `{"Issue_ID":"AAC-7"}`, ""},
		{"get_issue", `{}`, ""},
		{"get_issue", `{"issue_id":"` + strings.Repeat("A", maxResourceIDLen) + `"}`, strings.Repeat("A", maxResourceIDLen)},
		{"get_issue", `{"issue_id":"` + strings.Repeat("A", maxResourceIDLen+1) + `"}`, ""},
		{"get_issue", `{"issue_id":"` + strings.Repeat("A", 500) + `"}`, ""},
	}
	for _, tc := range tests {
		tool, _ := cat.Lookup(tc.tool)
		args, ok := mustInstance(t, tc.args).(map[string]any)
		if !ok {
			t.Fatalf("args %.40s is not an object", tc.args)
		}
		if got := tool.ResourceID(args); got != tc.want {
			t.Errorf("%s ResourceID(%.40s) = %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
	for _, tool := range cat.Tools() {
		if got := tool.ResourceID(nil); got != "" {
			t.Errorf("%s ResourceID(nil) = %q, want \"\"", tool.Name, got)
		}
	}
}

// snapshot is the reviewed public face of a tool: what clients see in tools/list and
// GET /tools. A change to it is an API change and must show up in review.
type snapshot struct {
	Name                  string          `json:"name"`
	Title                 string          `json:"title"`
	Description           string          `json:"description"`
	Annotations           map[string]bool `json:"annotations"`
	Scopes                []string        `json:"scopes"`
	AcceptsIdempotencyKey bool            `json:"accepts_idempotency_key"`
	InputSchema           json.RawMessage `json:"inputSchema"`
	OutputSchema          json.RawMessage `json:"outputSchema"`
}

func TestToolSnapshots(t *testing.T) {
	dir := filepath.Join("testdata", "toolsnaps")
	tools := New(Deps{}).Tools()
	want := map[string]bool{}
	for _, tool := range tools {
		file := filepath.Join(dir, tool.Name+".json")
		want[tool.Name+".json"] = true
		got, err := json.MarshalIndent(snapshot{
			Name: tool.Name, Title: tool.Title, Description: tool.Description,
			Annotations: map[string]bool{
				"readOnlyHint": tool.Annotations.ReadOnly, "destructiveHint": tool.Annotations.Destructive,
				"idempotentHint": tool.Annotations.Idempotent, "openWorldHint": tool.Annotations.OpenWorld,
			},
			Scopes: tool.Scopes, AcceptsIdempotencyKey: tool.AcceptsIdempotencyKey(),
			InputSchema: tool.InputSchema, OutputSchema: tool.OutputSchema,
		}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (run: go test ./shared/catalog -run TestToolSnapshots -update)", tool.Name, err)
			continue
		}
		if !bytes.Equal(old, got) {
			t.Errorf("%s drifted from %s; review the change and run: go test ./shared/catalog -run TestToolSnapshots -update\n--- now:\n%s", tool.Name, file, got)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("stale snapshot %s: no tool of that name", e.Name())
		}
	}
}

// --- schema helpers shared by the tests of this package ---

func compileSchema(t testing.TB, name string, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: schema is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem://" + strings.ReplaceAll(name, "/", "_") + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: schema does not compile: %v", name, err)
	}
	return sch
}

func mustInstance(t testing.TB, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatalf("instance %.60s: %v", s, err)
	}
	return v
}

func schemaProps(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s.Properties
}

func schemaRequired(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s.Required
}

// decodeInstance reads JSON the way the schema validator wants it (numbers kept exact).
func decodeInstance(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// TestDestructiveToolsDeclareConfirmation: the guard's preview, question and seal
// read a destructive tool's Confirm, so every destructive tool declares one, with
// a loader, a read scope that exists, and an argument that names the item; no other
// tool declares one.
func TestDestructiveToolsDeclareConfirmation(t *testing.T) {
	for _, tool := range New(Deps{}).Tools() {
		cf := tool.Confirm
		if !tool.Annotations.Destructive {
			if cf != nil {
				t.Errorf("%s: declares a confirmation but is not destructive", tool.Name)
			}
			continue
		}
		switch {
		case cf == nil:
			t.Errorf("%s: destructive without a confirmation", tool.Name)
		case cf.Load == nil:
			t.Errorf("%s: confirmation without Load", tool.Name)
		case !slices.Contains(auth.AllScopes, cf.ReadScope):
			t.Errorf("%s: read scope %q is no scope", tool.Name, cf.ReadScope)
		case cf.ParentScope != "" && !slices.Contains(auth.AllScopes, cf.ParentScope):
			t.Errorf("%s: parent scope %q is no scope", tool.Name, cf.ParentScope)
		case tool.ResourceArg == "":
			t.Errorf("%s: no ResourceArg names the item to load", tool.Name)
		}
	}
}
