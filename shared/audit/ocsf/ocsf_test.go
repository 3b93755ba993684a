package ocsf_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aacworkflow/aacmcp/shared/audit"
	at "github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/ocsf"
	"github.com/aacworkflow/aacmcp/shared/audit/ocsf/ocsftest"
	"github.com/aacworkflow/aacmcp/shared/audit/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite testdata/events.golden.jsonl")

// line maps r and encodes it as the export writes it.
func line(t *testing.T, r audit.Record, o ocsf.Options) (ocsf.Event, []byte) {
	t.Helper()
	e, err := ocsf.Map(r, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return e, b
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	_, err := ocsftest.Validate(t, s, b)
	return err
}

// TestFixtureValidates: every record of the report fixture maps to an event of its
// class with the class's required attributes.
func TestFixtureValidates(t *testing.T) {
	s := ocsftest.Schema(t)
	classes := map[int]int{}
	for _, r := range reporttest.Records() {
		e, b := line(t, r, ocsf.Options{})
		if err := validate(t, s, b); err != nil {
			t.Errorf("%s %s%s: %v\n%s", r.EventID, r.Tool, r.Action, err, b)
		}
		classes[e["class_uid"].(int)]++
	}
	if classes[ocsf.ClassAPIActivity] == 0 || classes[ocsf.ClassAuthentication] == 0 || classes[ocsf.ClassAuthorize] == 0 {
		t.Errorf("classes written: %v", classes)
	}
}

// TestSchemaRefuses: the schema is not a check that passes anything.
func TestSchemaRefuses(t *testing.T) {
	s := ocsftest.Schema(t)
	base := at.Record(time.Date(2025, 6, 22, 9, 0, 0, 0, time.UTC))
	for _, drop := range []string{"api", "actor", "src_endpoint", "cloud", "metadata", "time", "type_uid"} {
		e, err := ocsf.Map(base, ocsf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		delete(e, drop)
		line, _ := json.Marshal(e)
		if validate(t, s, line) == nil {
			t.Errorf("an API Activity without %s validated", drop)
		}
	}
	e, _ := ocsf.Map(at.Record(time.Date(2025, 6, 22, 9, 0, 0, 0, time.UTC), at.Authorization(audit.ActionConsentGranted)), ocsf.Options{})
	delete(e, "privileges")
	line, _ := json.Marshal(e)
	if validate(t, s, line) == nil {
		t.Error("an Authorize Session without privileges validated")
	}
	// OCSF 1.3.0 allows just one of privileges and group.
	e, _ = ocsf.Map(at.Record(time.Date(2025, 6, 22, 9, 0, 0, 0, time.UTC), at.Authorization(audit.ActionConsentGranted)), ocsf.Options{})
	e["group"] = map[string]any{"name": "admins"}
	line, _ = json.Marshal(e)
	if validate(t, s, line) == nil {
		t.Error("an Authorize Session with both privileges and group validated")
	}
}

// TestGolden pins the wire format: one record of each kind, with fixed ids.
func TestGolden(t *testing.T) {
	ts := time.Date(2025, 6, 22, 9, 30, 0, 0, time.UTC)
	id := func(s string) func(*audit.Record) { return func(r *audit.Record) { r.EventID = s } }
	recs := []audit.Record{
		at.Record(ts, id("01JYBFHG00A1B2C3D4E5F6G7H8"), at.Tool("list_issues"), at.Client(reporttest.Claude)),
		at.Record(ts, id("01JYBFHG00A1B2C3D4E5F6G7H9"), at.Tool("delete_issue"), at.Confirmed(true),
			at.Confirmation(audit.ConfirmationElicited), at.Denied("human_confirmation_required")),
		at.Record(ts, id("01JYBFHG00A1B2C3D4E5F6G7HA"), at.Tool("get_issue"), at.Denied("invalid_token"), at.Who("", ""),
			func(r *audit.Record) { r.UserID, r.SourceIP = "", "" }),
		at.Record(ts, id("01JYBFHG00A1B2C3D4E5F6G7HB"), at.Authorization(audit.ActionConsentGranted), at.Client(reporttest.Claude)),
		at.Record(ts, id("01JYBFHG00A1B2C3D4E5F6G7HC"), at.Authorization(audit.ActionTokenIssued), at.Client(reporttest.Claude)),
		at.Record(ts, id("01JYBFHG00A1B2C3D4E5F6G7HD"), at.Authorization(audit.ActionRefreshReuseDetected), at.Denied("invalid_token")),
		at.Record(ts, id("01JYBFHG00A1B2C3D4E5F6G7HE"), at.Authorization(audit.ActionGrantRevoked)),
	}
	s := ocsftest.Schema(t)
	var out bytes.Buffer
	for _, r := range recs {
		_, b := line(t, r, ocsf.Options{Region: "eu-west-1", ProductVersion: "test"})
		if err := validate(t, s, b); err != nil {
			t.Errorf("%s: %v", r.EventID, err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	golden := filepath.Join("testdata", "events.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestGolden -update writes it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("events differ from %s (-update rewrites it):\n%s", golden, out.String())
	}
}

func FuzzMap(f *testing.F) {
	f.Add("2025-06-22T09:30:00.000Z", "get_issue", "success", "")
	f.Add("not a time", "", "denied", "consent_granted")
	f.Fuzz(func(t *testing.T, ts, tool, outcome, action string) {
		r := at.Record(time.Date(2025, 6, 22, 9, 30, 0, 0, time.UTC), at.Tool(tool))
		r.Timestamp, r.Outcome = ts, outcome
		if action != "" {
			at.Authorization(action)(&r)
		}
		e, err := ocsf.Map(r, ocsf.Options{})
		if err != nil {
			return
		}
		if e["type_uid"] != e["class_uid"].(int)*100+e["activity_id"].(int) {
			t.Errorf("type_uid %v for class %v activity %v", e["type_uid"], e["class_uid"], e["activity_id"])
		}
		if _, err := json.Marshal(e); err != nil {
			t.Error(err)
		}
	})
}
