package clients_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/clients/harness"
)

// The shell scripts docs/clients.md shows verbatim (TestDocsShowTheScripts).
const (
	curlScript      = "curl-exchange.sh"
	inspectorScript = "inspector.sh"
)

// section is one "== title" block of a script's output and the JSON documents
// printed in it.
type section struct {
	title string
	docs  []json.RawMessage
}

// logTail is the end of tg's log: what the server saw of a script that failed.
func logTail(tg target) string {
	if tg.logs == nil {
		return "(none)"
	}
	l := tg.logs()
	const keep = 8 << 10
	if len(l) > keep {
		l = "..." + l[len(l)-keep:]
	}
	return l
}

// runScript runs sh script in test/clients with tg's endpoint and full token as
// MCP_URL and TOKEN (plus extra environment) and splits its stdout into sections.
func runScript(t *testing.T, script string, tg target, extra ...string) []section {
	t.Helper()
	dir := filepath.Join(harness.TestDir(t), "clients")
	cmd := exec.Command("sh", script)
	// The Inspector CLI reads its own package.json through a path relative to the
	// working directory's parent: test/clients, whose parent test/ has one, works.
	cmd.Dir = dir
	cmd.Env = append(append(harness.CleanEnv(), "MCP_URL="+tg.mcpURL, "TOKEN="+tg.full), extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sh %s: %v\nstdout:\n%s\nstderr:\n%s\nthe server's log, last lines:\n%s", script, err, stdout.String(), stderr.String(), logTail(tg))
		}
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("sh %s: timed out\nstdout:\n%s\nstderr:\n%s\nthe server's log, last lines:\n%s", script, stdout.String(), stderr.String(), logTail(tg))
	}
	secs, err := splitSections(stdout.String())
	if err != nil {
		t.Fatalf("sh %s: %v\nstdout:\n%s", script, err, stdout.String())
	}
	return secs
}

// splitSections parses a script's output: "== title" lines open sections, and the
// rest of each section is a sequence of JSON documents.
func splitSections(out string) ([]section, error) {
	var secs []section
	var body strings.Builder
	flush := func() error {
		if len(secs) == 0 {
			if strings.TrimSpace(body.String()) != "" {
				return errors.New("output before the first section")
			}
			return nil
		}
		dec := json.NewDecoder(strings.NewReader(body.String()))
		for {
			var doc json.RawMessage
			err := dec.Decode(&doc)
			if err == io.EOF {
				break
			}
			if err != nil {
				return errors.New("section " + secs[len(secs)-1].title + ": " + err.Error())
			}
			secs[len(secs)-1].docs = append(secs[len(secs)-1].docs, doc)
		}
		body.Reset()
		return nil
	}
	for _, line := range strings.Split(out, "\n") {
		if title, ok := strings.CutPrefix(line, "== "); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			secs = append(secs, section{title: title})
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	return secs, flush()
}

// callResult is an MCP tools/call result as JSON.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// toolsFromJSON decodes a tools/list result into the scenario's form.
func toolsFromJSON(t *testing.T, raw json.RawMessage) []listedTool {
	t.Helper()
	var res struct {
		Tools []struct {
			Name        string `json:"name"`
			Annotations struct {
				ReadOnly    *bool `json:"readOnlyHint"`
				Destructive *bool `json:"destructiveHint"`
				Idempotent  *bool `json:"idempotentHint"`
				OpenWorld   *bool `json:"openWorldHint"`
			} `json:"annotations"`
			Meta map[string]any `json:"_meta"`
		} `json:"tools"`
	}
	decode(t, raw, &res)
	var out []listedTool
	for _, tl := range res.Tools {
		lt := listedTool{Name: tl.Name, ReadOnly: tl.Annotations.ReadOnly, Destructive: tl.Annotations.Destructive,
			Idempotent: tl.Annotations.Idempotent, OpenWorld: tl.Annotations.OpenWorld}
		lt.Scopes, lt.RequiresConfirm = metaFacts(tl.Meta)
		out = append(out, lt)
	}
	return out
}

// checkRecorded checks the four calls both scripts make after the list: a read,
// a write, the refused delete and the confirmed one.
func checkRecorded(t *testing.T, read, write, refused, confirmed callResult) {
	t.Helper()
	var page struct {
		Issues []json.RawMessage `json:"issues"`
	}
	if read.IsError {
		t.Fatalf("the read failed: %+v", read)
	}
	decode(t, read.StructuredContent, &page)
	if len(page.Issues) == 0 {
		t.Errorf("the read returned no issues")
	}
	var issue struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if write.IsError {
		t.Fatalf("the write failed: %+v", write)
	}
	decode(t, write.StructuredContent, &issue)
	if issue.ID == "" || issue.Key == "" {
		t.Fatalf("create_issue returned %s", write.StructuredContent)
	}
	var e errorBody
	if !refused.IsError || len(refused.Content) == 0 || refused.StructuredContent != nil {
		t.Fatalf("delete without confirm: %+v, want an error result without structuredContent", refused)
	}
	decode(t, json.RawMessage(refused.Content[0].Text), &e)
	if e != confirmRefusal {
		t.Errorf("delete without confirm: %+v, want %+v", e, confirmRefusal)
	}
	var del struct {
		Deleted bool   `json:"deleted"`
		IssueID string `json:"issue_id"`
	}
	if confirmed.IsError {
		t.Fatalf("delete with confirm failed: %+v", confirmed)
	}
	decode(t, confirmed.StructuredContent, &del)
	if !del.Deleted || del.IssueID != issue.ID {
		t.Errorf("delete with confirm returned %s, want issue %s deleted", confirmed.StructuredContent, issue.ID)
	}
}

// TestCurlExchange runs curl-exchange.sh (the doc's curl walk-through) against
// every target and checks every answer.
func TestCurlExchange(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not on PATH")
	}
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			secs := runScript(t, curlScript, tg)
			if len(secs) != 7 {
				t.Fatalf("%d sections, want 7: %+v", len(secs), secs)
			}
			type rpc struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			result := func(s section, i int) json.RawMessage {
				t.Helper()
				if len(s.docs) <= i {
					t.Fatalf("section %q has %d answers", s.title, len(s.docs))
				}
				var r rpc
				decode(t, s.docs[i], &r)
				if r.Error != nil || r.Result == nil {
					t.Fatalf("section %q: %s", s.title, s.docs[i])
				}
				return r.Result
			}
			call := func(s section, i int) callResult {
				t.Helper()
				var c callResult
				decode(t, result(s, i), &c)
				return c
			}

			var init struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			decode(t, result(secs[0], 0), &init)
			if init.ProtocolVersion != "2025-11-25" {
				t.Errorf("initialize negotiated %q", init.ProtocolVersion)
			}
			checkAnnotations(t, toolsFromJSON(t, result(secs[1], 0)))
			// The write's section prints the answer twice (captured, then echoed).
			checkRecorded(t, call(secs[2], 0), call(secs[3], 0), call(secs[4], 0), call(secs[5], 0))

			var disc struct {
				SupportedVersions []string `json:"supportedVersions"`
				CacheScope        string   `json:"cacheScope"`
				ResultType        string   `json:"resultType"`
			}
			decode(t, result(secs[6], 0), &disc)
			for _, v := range revisions {
				if !strings.Contains(strings.Join(disc.SupportedVersions, " "), v) {
					t.Errorf("server/discover does not list %s: %v", v, disc.SupportedVersions)
				}
			}
			if disc.ResultType != "complete" {
				t.Errorf("server/discover resultType %q", disc.ResultType)
			}
			if c := call(secs[6], 1); c.IsError || c.StructuredContent == nil {
				t.Errorf("sessionless tools/call: %+v", c)
			}
		})
	}
}

// TestInspectorCLI runs inspector.sh (the doc's Inspector walk-through) with the
// pinned @modelcontextprotocol/inspector-cli against every target.
func TestInspectorCLI(t *testing.T) {
	bin := filepath.Join(harness.TestDir(t), "node_modules", ".bin", "mcp-inspector-cli")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the Inspector CLI is not installed (%v): run `npm ci --prefix test`", err)
	}
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			secs := runScript(t, inspectorScript, tg, "INSPECTOR="+bin)
			if len(secs) != 5 {
				t.Fatalf("%d sections, want 5: %+v", len(secs), secs)
			}
			for _, s := range secs {
				if len(s.docs) == 0 {
					t.Fatalf("section %q printed no JSON", s.title)
				}
			}
			checkAnnotations(t, toolsFromJSON(t, secs[0].docs[0]))
			var c [4]callResult
			for i := range c {
				decode(t, secs[i+1].docs[0], &c[i])
			}
			checkRecorded(t, c[0], c[1], c[2], c[3])
		})
	}
}
