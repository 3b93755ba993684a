// Package addtool follows docs/adding-a-tool.md in a scratch copy of the repository: it
// adds two tools the spec does not list, a read-only one (get_comment) and a
// destructive one (remove_comment), runs the regeneration commands the page gives,
// runs the tests of every package that enumerates tools, builds aacmcp, and sees the
// tools in tools/list, GET /tools, the README tool table and audit records. It fails
// when adding a tool touches more than its catalog file, its test and generated files.
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

const (
	tool        = "get_comment"
	destructive = "remove_comment"
)

// The files a developer writes (steps 1 and 3 of docs/adding-a-tool.md), for each tool.
var (
	toolFile, testFile = catalogFiles(tool)
	delFile, delTest   = catalogFiles(destructive)
	// The files the page says may change, and nothing else: the four above and what
	// step 4 regenerates.
	mayTouch = []string{"README.md", toolFile, testFile, delFile, delTest,
		"shared/catalog/testdata/toolsnaps/" + destructive + ".json",
		"shared/catalog/testdata/toolsnaps/" + tool + ".json"}
)

func catalogFiles(name string) (src, test string) {
	return "shared/catalog/" + name + ".go", "shared/catalog/" + name + "_test.go"
}

// delSource is a destructive tool: a delete tool (deletion) that declares what
// confirming it means, so the guard's preview and the elicit and require policies'
// question work for it with no change outside this file.
const delSource = `package catalog

import (
	"context"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func init() {
	register(115, removeCommentTool) // after delete_comment
}

func removeCommentTool(Deps) Tool {
	return deletion[removeCommentArgs]{
		idProp:    ` + "`" + `"comment_id": {` + "`+commentIDField+`" + `, "description": "Id of the comment."}` + "`" + `,
		deletedID: "Id of the removed comment.",
		denied:    "only a workspace admin or the comment's author can remove it",
		delete:    store.Queries.DeleteComment,
		confirm: Confirmation{ReadScope: "comments:read", Typed: TypeWord("remove"),
			Load: func(ctx context.Context, r store.Reader, ws, id string, _ bool) (Target, error) {
				cm, err := r.GetComment(ctx, ws, id)
				if err != nil {
					return Target{}, err
				}
				return Target{Kind: "comment", ID: cm.ID, Title: cm.Body, Owner: cm.Author, Version: cm.ID}, nil
			}},
	}.tool(Tool{
		Name:  "remove_comment",
		Title: "Remove comment",
		Description: prose(` + "`" + `
			Permanently remove one comment. Destructive: ask the user to confirm first
			and pass confirm: true only after they agree.` + "`" + `),
		Scopes:      []string{"comments:write"},
		ResourceArg: "comment_id",
	})
}

type removeCommentArgs struct {
	CommentID string ` + "`json:\"comment_id\"`" + `
	Confirm   bool   ` + "`json:\"confirm\"`" + `
}

func (a removeCommentArgs) target() string { return a.CommentID }
`

const delTestSource = `package catalog

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func TestRemoveComment(t *testing.T) {
	f := newFixture(t)
	f.newIssue(asMia, "discussed")
	mine := f.ok(asMia, "comment_issue", ` + "`" + `{"issue_id":"AAC-1","body":"mia"}` + "`" + `)["id"].(string)
	args := ` + "`" + `{"comment_id":"` + "` + mine + `" + `","confirm":true}` + "`" + `
	f.fails(asBen, "remove_comment", args, apperr.PermissionDenied)
	if got := f.ok(asMia, "remove_comment", args); got["deleted"] != true || got["comment_id"] != mine {
		t.Errorf("remove_comment = %v", got)
	}
	f.failsWith(asMia, "remove_comment", ` + "`" + `{"comment_id":"01JQ3Z7R6W7YV1T0B3Q6Y2K9ZC","confirm":true}` + "`" + `, store.ErrNotFound)
}
`

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
	// The symlink to the installed node_modules is not one of the repository's files
	// (.gitignore's entry names a directory).
	write(t, filepath.Join(scratch, ".git", "info", "exclude"), "/test/node_modules\n")
	run(t, scratch, "git", "add", "-A")
	run(t, scratch, "git", "-c", "user.name=addtool", "-c", "user.email=addtool@localhost", "commit", "-q", "-m", "base")

	// Steps 1 and 3: each tool's file and its test.
	write(t, filepath.Join(scratch, toolFile), toolSource)
	write(t, filepath.Join(scratch, testFile), testSource)
	write(t, filepath.Join(scratch, delFile), delSource)
	write(t, filepath.Join(scratch, delTest), delTestSource)
	// Step 4, with the page's own commands.
	for _, args := range regenerate {
		run(t, scratch, args[0], args[1:]...)
	}
	// The tests of every package that enumerates tools, the new ones included: the
	// catalog's (schema and args, snapshots, README, read-only, the spec table, which
	// lists neither), the guard's (every destructive tool under elicit and require,
	// scopes and roles of every tool), the transports' and the functions'.
	pkgs := enumerating(t, scratch)
	t.Logf("go test over the %d packages that enumerate tools: %v", len(pkgs), pkgs)
	run(t, scratch, "go", append([]string{"test", "-count=1"}, pkgs...)...)

	touched := changedFiles(t, scratch)
	t.Logf("adding %s and %s touched: %v", tool, destructive, touched)
	if want := slices.Sorted(slices.Values(mayTouch)); !slices.Equal(touched, want) {
		t.Errorf("adding two tools changed %v, want exactly %v (their files, their tests, generated files)", touched, want)
	}
	readme, err := os.ReadFile(filepath.Join(scratch, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| `" + tool + "` | yes | no | yes | no | `comments:read` |", "| `" + destructive + "` | no | yes | yes | no | `comments:write` |"} {
		if !strings.Contains(string(readme), row) {
			t.Errorf("README tool table lacks a row starting %s", row)
		}
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

	// The destructive tool: without confirm it is refused with a preview of the
	// comment, from its declaration; with confirm: true it removes the comment.
	status, body := post(t, srv, "/tools/"+destructive, `{"comment_id":"`+made.ID+`"}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `"code":"destructive_flag_missing"`) ||
		!strings.Contains(body, `"kind":"comment"`) || !strings.Contains(body, made.ID) {
		t.Errorf("%s without confirm: %d %s", destructive, status, body)
	}
	var removed struct {
		Deleted   bool   `json:"deleted"`
		CommentID string `json:"comment_id"`
	}
	status, body = post(t, srv, "/tools/"+destructive, `{"comment_id":"`+made.ID+`","confirm":true}`)
	if status != http.StatusOK || json.Unmarshal([]byte(body), &removed) != nil || !removed.Deleted || removed.CommentID != made.ID {
		t.Fatalf("%s: %d %s", destructive, status, body)
	}
	if status, body := post(t, srv, "/tools/"+tool, `{"comment_id":"`+made.ID+`"}`); status != http.StatusNotFound {
		t.Errorf("%s after %s: %d %s", tool, destructive, status, body)
	}
}

// enumerating lists the packages under dir whose code or tests import the catalog or
// the guard's test world, the two ways a test enumerates tools, and the catalog
// itself. The suites under test/ and bench/ are left out: they drive built binaries,
// browsers and emulators, and this test drives the built aacmcp itself below.
func enumerating(t *testing.T, dir string) []string {
	t.Helper()
	const mod = "github.com/aacworkflow/aacmcp/"
	out := run(t, dir, "go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	pkgs := []string{"./shared/catalog"}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		rel := "./" + strings.TrimPrefix(f[0], mod)
		if strings.HasPrefix(rel, "./test/") || strings.HasPrefix(rel, "./bench/") || slices.Contains(pkgs, rel) {
			continue
		}
		if slices.Contains(f[1:], mod+"shared/catalog") || slices.Contains(f[1:], mod+"shared/guard/guardtest") {
			pkgs = append(pkgs, rel)
		}
	}
	return pkgs
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

// copyModule copies the repository's files (tracked, or new and not ignored: the
// working changes too) to dst, so that every package's tests can run there.
func copyModule(t *testing.T, root, dst string) {
	t.Helper()
	files := run(t, root, "git", "ls-files", "--cached", "--others", "--exclude-standard")
	n := 0
	for _, f := range strings.Split(strings.TrimSpace(files), "\n") {
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
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("copied %d files; the file list looks wrong", n)
	}
	// The emulators the packages' tests start (dynalite, ...) are the installed ones.
	if modules := filepath.Join(root, "test", "node_modules"); exists(modules) {
		if err := os.Symlink(modules, filepath.Join(dst, "test", "node_modules")); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

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

// post calls a tool over REST with the full token: the status and the body.
func post(t *testing.T, srv *harness.Server, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.Base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Full)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
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
