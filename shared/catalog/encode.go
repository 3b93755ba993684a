package catalog

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/aacworkflow/aacmcp/shared/internal/jsonstr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// The results of the hot read tools (get_issue, list_issues; the issue writes share
// the issue shape) encode themselves: the guard uses AppendJSON where a result has
// it, and json.Marshal for every other result. Reflection was about 14% of a
// list_issues call's CPU (bench/profiles/list_issues.pprof).
//
// AppendJSON's bytes are exactly json.Marshal's for the same value, whatever it holds
// (field order, null for a nil slice or pointer, encoding/json's string escaping and
// time format): the results are stored for idempotent replays, compared with golden
// transcripts and with the bench peers' answers. Tests hold the two encoders equal
// (a table, differential fuzz targets) and fail when store.Issue or store.Assignee
// gains a field the encoder does not write.

// issueResult is an issue as the issue tools answer it; its JSON is store.Issue's.
type issueResult store.Issue

// issuePage is a list_issues answer; its JSON is store.IssuePage's.
type issuePage struct {
	Issues     []issueResult `json:"issues"`
	NextCursor string        `json:"next_cursor"`
}

// deletedResult is a delete tool's answer, {"deleted":true,"<idArg>":"<id>"}: the
// deleted item's id under the name of the argument that named it (deletion.tool).
type deletedResult struct{ idArg, id string }

// MarshalJSON encodes d for json.Marshal, which cannot see its fields.
func (d deletedResult) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil) }

// AppendJSON appends d as MarshalJSON encodes it.
func (d deletedResult) AppendJSON(dst []byte) ([]byte, error) {
	dst = jsonstr.Append(append(dst, `{"deleted":true,`...), d.idArg)
	dst = jsonstr.Append(append(dst, ':'), d.id)
	return append(dst, '}'), nil
}

// errTimeRange is what AppendJSON reports for a time RFC 3339 cannot express, where
// json.Marshal fails too (time.Time.MarshalJSON). The guard then encodes the result
// with json.Marshal, so the error the call reports is encoding/json's own.
var errTimeRange = errors.New("time not representable in RFC 3339")

// AppendJSON appends i as json.Marshal encodes it.
func (i issueResult) AppendJSON(dst []byte) ([]byte, error) {
	return appendIssue(slices.Grow(dst, issueSize(&i)), &i)
}

// AppendJSON appends p as json.Marshal encodes it.
func (p issuePage) AppendJSON(dst []byte) ([]byte, error) {
	n := len(`{"issues":[],"next_cursor":""}`) + len(p.NextCursor)
	for k := range p.Issues {
		n += issueSize(&p.Issues[k]) + len(",")
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, `{"issues":`...)
	if p.Issues == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for k := range p.Issues {
			if k > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendIssue(dst, &p.Issues[k]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	dst = jsonstr.Append(append(dst, `,"next_cursor":`...), p.NextCursor)
	return append(dst, '}'), nil
}

func appendIssue(dst []byte, i *issueResult) ([]byte, error) {
	dst = jsonstr.Append(append(dst, `{"id":`...), i.ID)
	dst = jsonstr.Append(append(dst, `,"key":`...), i.Key)
	dst = jsonstr.Append(append(dst, `,"title":`...), i.Title)
	dst = jsonstr.Append(append(dst, `,"description":`...), i.Description)
	dst = jsonstr.Append(append(dst, `,"status":`...), i.Status)
	dst = jsonstr.Append(append(dst, `,"priority":`...), i.Priority)
	dst = append(dst, `,"labels":`...)
	if i.Labels == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for k, l := range i.Labels {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = jsonstr.Append(dst, l)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"assignee":`...)
	if a := i.Assignee; a == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsonstr.Append(append(dst, `{"type":`...), a.Type)
		dst = jsonstr.Append(append(dst, `,"id":`...), a.ID)
		dst = append(dst, '}')
	}
	dst = jsonstr.Append(append(dst, `,"created_by":`...), i.CreatedBy)
	dst, err := appendTime(append(dst, `,"created_at":`...), i.CreatedAt)
	if err != nil {
		return dst, err
	}
	if dst, err = appendTime(append(dst, `,"updated_at":`...), i.UpdatedAt); err != nil {
		return dst, err
	}
	dst = strconv.AppendInt(append(dst, `,"version":`...), i.Version, 10)
	dst = strconv.AppendInt(append(dst, `,"comment_count":`...), i.CommentCount, 10)
	return append(dst, '}'), nil
}

// appendTime appends t as time.Time.MarshalJSON writes it (RFC 3339 with the
// nanoseconds that are not zero; AppendFormat takes the same formatting path), and
// refuses what MarshalJSON refuses, with its checks: a year that is not four digits,
// a zone offset of 24 hours or more.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	dst = append(dst, '"')
	n0 := len(dst)
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	if dst[n0+len("2006")] != '-' {
		return dst, errTimeRange
	}
	if dst[len(dst)-1] != 'Z' {
		c := dst[len(dst)-len("Z07:00")]
		h := dst[len(dst)-len("07:00"):]
		if ('0' <= c && c <= '9') || 10*(h[0]-'0')+(h[1]-'0') >= 24 {
			return dst, errTimeRange
		}
	}
	return append(dst, '"'), nil
}

// issueFixedSize is the length of an issue's JSON without its strings' bytes: keys,
// punctuation, an assignee object, two times with nanoseconds and zone offset, two
// int64s at their widest.
const issueFixedSize = len(`{"id":"","key":"","title":"","description":"","status":"","priority":"",`+
	`"labels":[],"assignee":{"type":"","id":""},"created_by":"","created_at":"","updated_at":"",`+
	`"version":,"comment_count":}`) + 2*len("2006-01-02T15:04:05.999999999-07:00") + 2*len("-9223372036854775808")

// issueSize is the length of i's JSON if no character needs escaping, the usual case;
// it only sizes the buffer, so an escaped string costs a regrowth, not an error.
func issueSize(i *issueResult) int {
	n := issueFixedSize + len(i.ID) + len(i.Key) + len(i.Title) + len(i.Description) +
		len(i.Status) + len(i.Priority) + len(i.CreatedBy)
	for _, l := range i.Labels {
		n += len(l) + len(`"",`)
	}
	if a := i.Assignee; a != nil {
		n += len(a.Type) + len(a.ID)
	}
	return n
}
