// Package addtool follows docs/adding-a-tool.md in a scratch copy of the repository: it
// adds a tool the spec does not list (get_comment), runs the regeneration commands the
// page gives, runs the catalog's tests, builds aacmcp, and sees the tool in tools/list,
// GET /tools, the README tool table and an audit record. It fails when adding a tool
// touches more than its catalog file, its test and generated files.
package addtool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

const tool = "get_comment"

// The files a developer writes (steps 1 and 3 of docs/adding-a-tool.md).
var (
	toolFile = "shared/catalog/" + tool + ".go"
	testFile = "shared/catalog/" + tool + "_test.go"
	// The files the page says may change, and nothing else: the two above and what
	// step 4 regenerates.
	mayTouch = []string{"README.md", toolFile, testFile, "shared/catalog/testdata/toolsnaps/" + tool + ".json"}
)

const toolSource = `package catalog

import (
	"context"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func init() {
	register(35, getCommentTool) // after list_comments
}

func getCommentTool(Deps) Tool {
	return reads(Tool{
		Name:  "get_comment",
		Title: "Get comment",
		Description: prose(` + "`" + `
			Get one comment by its id, as list_comments returns it: its issue, author,
			body and creation time. Read-only; safe to call any time.` + "`" + `),
		Annotations:  Annotations{ReadOnly: true, Destructive: false, Idempotent: true, OpenWorld: false},
		Scopes:       []string{"comments:read"},
		InputSchema:  input([]string{"comment_id"}, ` + "`" + `"comment_id": {` + "`+commentIDField+`" + `, "description": "Id of the comment."}` + "`" + `),
		OutputSchema: schema(commentObject),
		ResourceArg:  "comment_id",
	}, getComment)
}

type getCommentArgs struct {
	CommentID string ` + "`json:\"comment_id\"`" + `
}

func getComment(ctx context.Context, c Call, a getCommentArgs, r store.Reader) (any, error) {
	cm, err := r.GetComment(ctx, c.Principal.WorkspaceID, a.CommentID)
	if err != nil {
		return nil, err
	}
	return cm, nil
}
`

const testSource = `package catalog

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func init() {
	readOnlyCases["get_comment"] = func(s readOnlySeed) readOnlyCase {
		return readOnlyCase{` + "`" + `{"comment_id":"` + "` + s.commentID + `" + `"}` + "`" + `, "body", ` + "`" + `{"comment_id":"nope"}` + "`" + `}
	}
}

func TestGetComment(t *testing.T) {
	f := newFixture(t)
	f.newIssue(asMia, "discussed")
	f.newIssue(asOutsider, "theirs")
	mine := f.ok(asMia, "comment_issue", ` + "`" + `{"issue_id":"AAC-1","body":"mia"}` + "`" + `)["id"].(string)
	theirs := f.ok(asOutsider, "comment_issue", ` + "`" + `{"issue_id":"OTH-1","body":"x"}` + "`" + `)["id"].(string)

	if got := f.ok(asBen, "get_comment", ` + "`" + `{"comment_id":"` + "` + mine + `" + `"}` + "`" + `); got["body"] != "mia" || got["author"] != mia {
		t.Errorf("get_comment = %v", got)
	}
	f.failsWith(asBen, "get_comment", ` + "`" + `{"comment_id":"` + "` + theirs + `" + `"}` + "`" + `, store.ErrNotFound)
	f.failsWith(asBen, "get_comment", ` + "`" + `{"comment_id":"01JQ3Z7R6W7YV1T0B3Q6Y2K9ZC"}` + "`" + `, store.ErrNotFound)
}
`

func TestAddATool(t *testing.T) {
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "adding-a-tool.md"))
	if err != nil {
		t.Fatal(err)
	}
	regenerate := regenerateCommands(t, string(doc))

	scratch := t.TempDir()
	copyModule(t, root, scratch)
	run(t, scratch, "git", "init", "-q")
	run(t, scratch, "git", "add", "-A")
	run(t, scratch, "git", "-c", "user.name=addtool", "-c", "user.email=addtool@localhost", "commit", "-q", "-m", "base")

	// Steps 1 and 3: the tool's file and its test.
	write(t, filepath.Join(scratch, toolFile), toolSource)
	write(t, filepath.Join(scratch, testFile), testSource)
	// Step 4, with the page's own commands.
	for _, args := range regenerate {
		run(t, scratch, args[0], args[1:]...)
	}
	// The catalog's tests over every tool, the new one included: schema and args,
	// snapshots, README, read-only, the spec table (which does not list it).
	run(t, scratch, "go", "test", "-count=1", "./shared/catalog")

	if touched := changedFiles(t, scratch); !slices.Equal(touched, mayTouch) {
		t.Errorf("adding a tool changed %v, want exactly %v (its file, its test, generated files)", touched, mayTouch)
	}
	readme, err := os.ReadFile(filepath.Join(scratch, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if row := "| `" + tool + "` | yes | no | yes | no | `comments:read` |"; !strings.Contains(string(readme), row) {
		t.Errorf("README tool table lacks a row starting %s", row)
	}

	bin := filepath.Join(t.TempDir(), "aacmcp")
	run(t, scratch, "go", "build", "-o", bin, "./cmd/aacmcp")
	data := t.TempDir()
	srv, err := harness.Serve(bin, data, "--dev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Terminate(30 * time.Second) })

	// tools/list, in its place after list_comments.
	var list struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	mcpCall(t, srv, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, &list)
	var names []string
	for _, tl := range list.Result.Tools {
		names = append(names, tl.Name)
	}
	if i := slices.Index(names, tool); i < 1 || names[i-1] != "list_comments" {
		t.Errorf("tools/list = %v, want %s right after list_comments", names, tool)
	}

	// GET /tools.
	var rest struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if status := request(t, srv, http.MethodGet, "/tools", "", &rest); status != http.StatusOK {
		t.Fatalf("GET /tools: %d", status)
	}
	if !slices.ContainsFunc(rest.Tools, func(x struct{ Name string }) bool { return x.Name == tool }) {
		t.Errorf("GET /tools lacks %s", tool)
	}

	// A call, and its audit record.
	var issues struct {
		Issues []struct{ ID string } `json:"issues"`
	}
	if status := request(t, srv, http.MethodPost, "/tools/list_issues", `{}`, &issues); status != http.StatusOK || len(issues.Issues) == 0 {
		t.Fatalf("list_issues: %d, %d issues (the dev seed has some)", status, len(issues.Issues))
	}
	var made struct{ ID string }
	if status := request(t, srv, http.MethodPost, "/tools/comment_issue", `{"issue_id":"`+issues.Issues[0].ID+`","body":"for get_comment"}`, &made); status != http.StatusOK {
		t.Fatalf("comment_issue: %d", status)
	}
	var got struct{ ID, Body string }
	if status := request(t, srv, http.MethodPost, "/tools/"+tool, `{"comment_id":"`+made.ID+`"}`, &got); status != http.StatusOK || got.ID != made.ID || got.Body != "for get_comment" {
		t.Fatalf("%s: %d %+v", tool, status, got)
	}
	if rec := auditRecord(t, data, tool); rec["outcome"] != "success" || rec["resource_id"] != made.ID || rec["transport"] != "rest" {
		t.Errorf("audit record of %s = %v", tool, rec)
	}
}

// regenerateCommands are the `go test ... -update...` lines of the page's step 4.
func regenerateCommands(t *testing.T, doc string) [][]string {
	t.Helper()
	var out [][]string
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "go test ") || !strings.Contains(line, "-update") {
			continue
		}
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		out = append(out, strings.Fields(line))
	}
	if len(out) == 0 {
		t.Fatal("docs/adding-a-tool.md gives no regeneration command (go test ... -update...)")
	}
	return out
}

// copyModule copies what building aacmcp and testing the catalog need: go.mod, go.sum,
// README.md and every file (tracked, or new and not ignored: the working changes too)
// under the directories of the packages they use.
func copyModule(t *testing.T, root, dst string) {
	t.Helper()
	out := run(t, root, "go", "list", "-test", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./cmd/aacmcp", "./shared/catalog")
	var dirs []string
	for _, d := range strings.Fields(out) {
		if rel, err := filepath.Rel(root, d); err == nil && !strings.HasPrefix(rel, "..") {
			dirs = append(dirs, filepath.ToSlash(rel)+"/")
		}
	}
	files := run(t, root, "git", "ls-files", "--cached", "--others", "--exclude-standard")
	n := 0
	for _, f := range strings.Split(strings.TrimSpace(files), "\n") {
		keep := f == "go.mod" || f == "go.sum" || f == "README.md" || slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(f, d) })
		if !keep {
			continue
		}
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dst, f), string(b))
		n++
	}
	if n < 100 {
		t.Fatalf("copied %d files; the package list looks wrong", n)
	}
}

// changedFiles lists what differs from the scratch copy's first commit, sorted.
func changedFiles(t *testing.T, dir string) []string {
	t.Helper()
	out := run(t, dir, "git", "status", "--porcelain", "--untracked-files=all")
	var files []string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if len(line) > 3 { // "XY path"
			files = append(files, line[3:])
		}
	}
	slices.Sort(files)
	return files
}

func mcpCall(t *testing.T, srv *harness.Server, body string, into any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.MCPURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Full)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	// An SSE answer carries the JSON-RPC message in its data line.
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				b = []byte(d)
			}
		}
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, into) != nil {
		t.Fatalf("POST /mcp %s: %d %s", body, res.StatusCode, b)
	}
}

func request(t *testing.T, srv *harness.Server, method, path, body string, into any) int {
	t.Helper()
	req, err := http.NewRequest(method, srv.Base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Full)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	} else {
		t.Logf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode
}

var auditFile = regexp.MustCompile(`^dt=\d{4}-\d{2}-\d{2}/hour=\d{2}/[^/]+\.json$`)

// auditRecord is the one record of a call of name in the server's audit log. The
// record is written before the answer returns (docs/architecture.md section 6), so it
// is there by now.
func auditRecord(t *testing.T, data, name string) map[string]any {
	t.Helper()
	dir := filepath.Join(data, "audit")
	var found []map[string]any
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !auditFile.MatchString(filepath.ToSlash(rel)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["tool"] == name {
				found = append(found, rec)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("%d audit records of %s under %s, want 1", len(found), name, dir)
	}
	return found[0]
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, out, stderr.String())
	}
	return string(out)
}
