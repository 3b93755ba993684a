package catalog

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Schema building blocks. Each tool's schemas are written out in its family file; the
// pieces below are the ones several tools share, so each concept is spelled once.
// Schemas carry no "$schema" keyword: MCP 2025-11-25 makes 2020-12 the default dialect,
// and some clients reject dialect URIs they do not know.
//
// Input schemas close every object with additionalProperties:false (an unknown argument
// is invalid_arguments, not silently ignored).
//
// Output schemas describe the success result only. Error results never carry
// structuredContent: official clients validate structuredContent against the output
// schema even when isError is true, so the MCP layer sends errors as text alone. Output
// objects stay open (no additionalProperties:false) so that adding a result field later
// does not break clients that validate.

// Field bodies: the inside of a property's object, to which each use adds its own
// description.
const (
	// issueIDField accepts an issue UUID or a key such as AAC-42.
	issueIDField = `"type": "string", "minLength": 1, "maxLength": 64,
		"pattern": "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[A-Za-z][A-Za-z0-9]{0,9}-[1-9][0-9]{0,17})$"`
	commentIDField = `"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[0-9A-Za-z_-]+$"`
	agentIDField   = `"type": "string", "minLength": 1, "maxLength": 128`
	statusField    = `"type": "string", "enum": ["open", "in_progress", "done", "closed"]`
	priorityField  = `"type": "string", "enum": ["low", "medium", "high", "urgent"]`
	titleField     = `"type": "string", "minLength": 1, "maxLength": 256`
	textField      = `"type": "string", "maxLength": 65536`
	labelsField    = `"type": "array", "maxItems": 20, "items": {"type": "string", "minLength": 1, "maxLength": 64}`
	limitField     = `"type": "integer", "minimum": 1, "maximum": 100`
	cursorField    = `"type": "string", "minLength": 1, "maxLength": 2048`
	dateField      = `"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"`
	confirmField   = `"type": "boolean", "const": true`

	// issueIDProp is the argument of every tool that acts on one issue.
	issueIDProp = `"issue_id": {` + issueIDField + `, "description": "Issue UUID or key such as AAC-42."}`
	// pageProps are the paging arguments of the list tools.
	pageProps = `"limit": {` + limitField + `, "description": "Page size, 1-100; default 25."},
		"cursor": {` + cursorField + `, "description": "next_cursor from the previous page."}`

	idempotencyKeyProp = `"idempotency_key": {"type": "string", "minLength": 1, "maxLength": 128,
		"description": "Optional client-chosen key (1-128 chars). Retrying with the same key and the same arguments returns the first result instead of acting twice; the same key with other arguments is a conflict. Use a fresh key per intended action."}`
	confirmProp = `"confirm": {` + confirmField + `,
		"description": "Must be the JSON boolean true, set only after the user explicitly approved this deletion."}`

	timeField = `"type": "string", "format": "date-time"`
)

// Output objects.
const (
	issueObject = `{
	"type": "object",
	"properties": {
		"id": {"type": "string", "description": "Issue UUID."},
		"key": {"type": "string", "description": "Human key, such as AAC-42."},
		"title": {"type": "string"},
		"description": {"type": "string"},
		"status": {` + statusField + `},
		"priority": {` + priorityField + `},
		"labels": {"type": "array", "items": {"type": "string"}},
		"assignee": {
			"type": ["object", "null"],
			"properties": {
				"type": {"type": "string", "enum": ["user", "agent"]},
				"id": {"type": "string"}
			},
			"required": ["type", "id"],
			"description": "Who works on the issue, or null."
		},
		"created_by": {"type": "string", "description": "User id of the creator."},
		"created_at": {` + timeField + `},
		"updated_at": {` + timeField + `},
		"version": {"type": "integer", "minimum": 1, "description": "Incremented by every change; pass it as expected_version to update_issue."},
		"comment_count": {"type": "integer", "minimum": 0}
	},
	"required": ["id", "key", "title", "description", "status", "priority", "labels", "assignee",
		"created_by", "created_at", "updated_at", "version", "comment_count"]
}`

	commentObject = `{
	"type": "object",
	"properties": {
		"id": {"type": "string", "description": "Comment id."},
		"issue_id": {"type": "string", "description": "UUID of the issue."},
		"author": {"type": "string", "description": "User id of the author."},
		"body": {"type": "string"},
		"created_at": {` + timeField + `}
	},
	"required": ["id", "issue_id", "author", "body", "created_at"]
}`

	nextCursorProp = `"next_cursor": {"type": "string", "description": "Pass as cursor to get the next page; empty on the last page."}`
)

// input is a tool's input schema: an object of props (each a member `"name": {...}`),
// of which a call must give the required ones and may give nothing else
// (additionalProperties: false).
func input(required []string, props ...string) json.RawMessage {
	return schema(object(required, props) + `, "additionalProperties": false}`)
}

// output is an output schema: an object of props, open (see above).
func output(required []string, props ...string) json.RawMessage {
	return schema(object(required, props) + `}`)
}

// object is the schema of an object of props and required, left unclosed for input
// and output to finish.
func object(required, props []string) string {
	s := `{"type": "object", "properties": {` + strings.Join(props, ", ") + `}`
	if len(required) > 0 {
		s += `, "required": ["` + strings.Join(required, `", "`) + `"]`
	}
	return s
}

// pageOutput is a list tool's output schema: one page of items under key, and the
// cursor of the next.
func pageOutput(key, item string) json.RawMessage {
	return output([]string{key, "next_cursor"}, `"`+key+`": {"type": "array", "items": `+item+`}`, nextCursorProp)
}

// schema compacts a schema written in this package. The text is a constant of this
// package, never outside input, and the catalog test compiles every schema, so a
// malformed one cannot ship: failing loudly at start-up is the right response.
func schema(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic("catalog: malformed schema literal: " + err.Error())
	}
	return b.Bytes()
}
