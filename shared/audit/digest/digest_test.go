package digest

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// localEnv is a data folder with records in it, and a clock three hours ahead of the
// files' mtimes, so that the hour they were written in is closed.
type localEnv struct {
	dir    string
	store  LocalStore
	signer *FileSigner
	now    time.Time
	clock  func() time.Time // when set, the writer's clock instead of now
}

func newLocalEnv(t *testing.T) *localEnv {
	t.Helper()
	dir := t.TempDir()
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().Add(-time.Minute)
	for i := range 5 {
		if err := s.Write(context.Background(), audittest.Record(ts.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	signer, err := LoadOrCreateFileSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &localEnv{dir: dir, store: LocalStore{Dir: dir}, signer: signer, now: time.Now().Add(3 * time.Hour).Truncate(time.Hour).Add(30 * time.Minute)}
}

func (e *localEnv) writer() *Writer {
	clock := e.clock
	if clock == nil {
		clock = func() time.Time { return e.now }
	}
	return &Writer{Store: e.store, Signer: e.signer, Now: clock, Grace: 2 * time.Minute,
		Log: slog.New(slog.DiscardHandler)}
}

func (e *localEnv) verify(t *testing.T) *Report {
	t.Helper()
	keys, err := DataFolderKeys(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	v := &Verifier{Store: e.store, Keys: keys, Now: func() time.Time { return e.now }, Keyed: len(keys) > 0, Delivery: 2 * time.Minute}
	rep, err := v.Verify(context.Background(), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// writeAll writes the due digests and returns their paths.
func writeAll(t *testing.T, w *Writer) []string {
	t.Helper()
	names, err := w.WriteDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 3 {
		t.Fatalf("wrote %d digests, want one per closed hour (at least 3): %v", len(names), names)
	}
	return names
}

func TestIntactLogVerifies(t *testing.T) {
	e := newLocalEnv(t)
	names := writeAll(t, e.writer())
	rep := e.verify(t)
	if !rep.Intact() {
		t.Fatalf("problems in an untouched log: %+v", rep.Problems)
	}
	if rep.Records != 5 || rep.Objects != 1 || rep.Digests != len(names) {
		t.Errorf("report %+v: want 5 records in 1 object (compacted) over %d digests", rep, len(names))
	}
	// Empty hours are digested too: every window after the first lists nothing.
	for _, n := range names[1:] {
		b, err := e.store.Read(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Objects) != 0 && !strings.HasSuffix(d.Objects[0].Path, ".parquet") {
			t.Errorf("%s lists %v", n, d.Objects)
		}
	}
	// A second run finds nothing due.
	again, err := e.writer().WriteDue(context.Background())
	if err != nil || len(again) != 0 {
		t.Errorf("second WriteDue: %v, %v", again, err)
	}
	// The key file is private.
	fi, err := os.Stat(filepath.Join(e.dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", fi.Mode(), err)
	}
}

// TestTamperingIsNamed changes the log in each way the issue lists and checks that
// Verify names the file with the right kind of problem.
func TestTamperingIsNamed(t *testing.T) {
	ctx := context.Background()
	objectOf := func(t *testing.T, e *localEnv, names []string) (string, string) {
		for _, n := range names {
			b, _ := e.store.Read(ctx, n)
			d, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Objects) > 0 {
				return d.Objects[0].Path, n
			}
		}
		t.Fatal("no digest lists an object")
		return "", ""
	}
	// resign replaces a digest by a validly signed one with other content, as someone
	// holding the key would.
	resign := func(t *testing.T, e *localEnv, name string, change func(*Digest)) {
		p := filepath.Join(e.dir, name)
		b, _ := os.ReadFile(p)
		d, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		change(d)
		sig, _ := e.signer.Sign(ctx, SignedBytes(d))
		d.Signature = base64.StdEncoding.EncodeToString(sig)
		if err := os.WriteFile(p, Encode(d), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		tamper func(t *testing.T, e *localEnv, names []string) (kind, path string)
	}{
		{"modified byte", func(t *testing.T, e *localEnv, names []string) (string, string) {
			obj, _ := objectOf(t, e, names)
			p := filepath.Join(e.dir, obj)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return ProblemModified, obj
		}},
		{"deleted object", func(t *testing.T, e *localEnv, names []string) (string, string) {
			obj, _ := objectOf(t, e, names)
			if err := os.Remove(filepath.Join(e.dir, obj)); err != nil {
				t.Fatal(err)
			}
			return ProblemMissing, obj
		}},
		{"added object", func(t *testing.T, e *localEnv, names []string) (string, string) {
			obj, _ := objectOf(t, e, names)
			added := filepath.Join(filepath.Dir(obj), "forged.json")
			line := audit.AppendLine(nil, audittest.Record(time.Now()))
			if err := os.WriteFile(filepath.Join(e.dir, added), line, 0o600); err != nil {
				t.Fatal(err)
			}
			return ProblemAdded, added
		}},
		{"chain broken", func(t *testing.T, e *localEnv, names []string) (string, string) {
			// A digest replaced by another, validly signed: the next one's hash of it
			// no longer matches.
			resign(t, e, names[1], func(d *Digest) { d.PreviousSignature = "x" + d.PreviousSignature })
			return ProblemChainBroken, names[2]
		}},
		{"bad signature", func(t *testing.T, e *localEnv, names []string) (string, string) {
			p := filepath.Join(e.dir, names[0])
			b, _ := os.ReadFile(p)
			d, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			d.Objects = []Object{} // hide the hour's records, keep the old signature
			if err := os.WriteFile(p, Encode(d), 0o600); err != nil {
				t.Fatal(err)
			}
			return ProblemBadSignature, names[0]
		}},
		{"missing digest hour", func(t *testing.T, e *localEnv, names []string) (string, string) {
			if err := os.Remove(filepath.Join(e.dir, names[1])); err != nil {
				t.Fatal(err)
			}
			return ProblemMissingDigest, names[1][:strings.LastIndex(names[1], "/")+1]
		}},
		{"every digest deleted", func(t *testing.T, e *localEnv, names []string) (string, string) {
			if err := os.RemoveAll(filepath.Join(e.dir, "audit-digest")); err != nil {
				t.Fatal(err)
			}
			return ProblemNoDigests, Prefix
		}},
		{"every digest and object deleted, the key kept", func(t *testing.T, e *localEnv, names []string) (string, string) {
			for _, d := range []string{"audit-digest", "audit"} {
				if err := os.RemoveAll(filepath.Join(e.dir, d)); err != nil {
					t.Fatal(err)
				}
			}
			return ProblemNoDigests, Prefix
		}},
		{"forged object with a future mtime", func(t *testing.T, e *localEnv, names []string) (string, string) {
			obj, _ := objectOf(t, e, names)
			forged := forge(t, e, filepath.Dir(obj)+"/forged.json", time.Now(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			return ProblemFutureTime, forged
		}},
		{"forged object with a past mtime", func(t *testing.T, e *localEnv, names []string) (string, string) {
			obj, _ := objectOf(t, e, names)
			forged := forge(t, e, filepath.Dir(obj)+"/forged.json", time.Now(), time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
			return ProblemAdded, forged
		}},
		{"forged object after the last digest, in a digested partition", func(t *testing.T, e *localEnv, names []string) (string, string) {
			obj, _ := objectOf(t, e, names)
			forged := forge(t, e, filepath.Dir(obj)+"/forged.json", time.Now(), e.now.Add(-time.Minute))
			return ProblemAdded, forged
		}},
		{"forged object after the last digest, its records in digested time", func(t *testing.T, e *localEnv, names []string) (string, string) {
			// The partition of the hour under way (not digested), records of the
			// digested hour the log began in.
			part := e.now.UTC().Format("audit/dt=2006-01-02/hour=15")
			forged := forge(t, e, part+"/forged.json", time.Now(), e.now.Add(-time.Minute))
			return ProblemAdded, forged
		}},
		{"a copy of a compacted Parquet file", func(t *testing.T, e *localEnv, names []string) (string, string) {
			obj, _ := objectOf(t, e, names)
			b, err := os.ReadFile(filepath.Join(e.dir, obj))
			if err != nil || !strings.HasSuffix(obj, ".parquet") {
				t.Fatalf("%s: %v", obj, err)
			}
			cp := filepath.Dir(obj) + "/copy.parquet"
			writeAt(t, filepath.Join(e.dir, cp), b, e.now.Add(-time.Minute))
			return ProblemAdded, cp
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newLocalEnv(t)
			names := writeAll(t, e.writer())
			kind, path := tt.tamper(t, e, names)
			rep := e.verify(t)
			if !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == kind && p.Path == path }) {
				t.Fatalf("want %s %s among the problems, got %+v", kind, path, rep.Problems)
			}
		})
	}
}

// forge writes a JSON file of one delete_issue record timestamped ts at the path p
// (relative to the data folder) and sets its mtime.
func forge(t *testing.T, e *localEnv, p string, ts, mtime time.Time) string {
	t.Helper()
	r := audittest.Record(ts)
	r.Tool, r.Outcome = "delete_issue", "success"
	writeAt(t, filepath.Join(e.dir, p), audit.AppendLine(nil, r), mtime)
	return p
}

func writeAt(t *testing.T, p string, b []byte, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestLateObjectIsListed: an object of an hour more than two days old, written after
// the last digest (a replay of the failure queue), is listed by the next digest and
// marked late, and verify counts it instead of calling it added.
func TestLateObjectIsListed(t *testing.T) {
	e := newLocalEnv(t)
	e.clock = time.Now
	e.now = time.Now().Add(time.Hour)
	if _, err := e.writer().WriteNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := file.New(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), audittest.Record(time.Now().Add(-72*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.writer().WriteNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := e.verify(t)
	if !rep.Intact() || rep.Records != 6 || rep.Late != 1 {
		t.Fatalf("after a record 72 hours late: %+v", rep)
	}
}

func TestWriteNowClosesTheOpenHour(t *testing.T) {
	e := newLocalEnv(t)
	e.clock = time.Now // the records' hour is still open
	e.now = time.Now().Add(time.Hour)
	w := e.writer()
	names, err := w.WriteNow(context.Background())
	if err != nil || len(names) == 0 {
		t.Fatalf("WriteNow: %v %v", names, err)
	}
	rep := e.verify(t)
	if !rep.Intact() || rep.Records != 5 {
		t.Fatalf("after a clean stop: %+v", rep)
	}
	// The next hourly run continues the chain from the partial window.
	e.clock = nil
	e.now = time.Now().Add(2 * time.Hour)
	more, err := e.writer().WriteDue(context.Background())
	if err != nil || len(more) == 0 {
		t.Fatalf("WriteDue after WriteNow: %v %v", more, err)
	}
	if rep := e.verify(t); !rep.Intact() {
		t.Fatalf("after the next run: %+v", rep.Problems)
	}
	// A compaction after the digest leaves what it lists alone.
	if _, err := file.Compact(e.dir, time.Now().Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if rep := e.verify(t); !rep.Intact() {
		t.Fatalf("after compaction: %+v", rep.Problems)
	}
}

// TestSealKeepsDigestedJSON: a JSON file digested as such (written while another
// writer held the hour, so compaction had not taken it) is never compacted away.
func TestSealKeepsDigestedJSON(t *testing.T) {
	e := newLocalEnv(t)
	e.clock = time.Now
	e.now = time.Now().Add(time.Hour)
	if _, err := e.writer().WriteNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A late file for the same hour, written after the digest.
	s, err := file.New(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), audittest.Record(time.Now().Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Digest it as JSON: seal first, without compaction (what WriteNow does when the
	// compaction lock is busy).
	w := e.writer()
	if _, err := w.writeUntil(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := file.Compact(e.dir, time.Now().Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if rep := e.verify(t); !rep.Intact() || rep.Records != 6 {
		t.Fatalf("compaction removed a digested JSON file: %+v", rep)
	}
}

// TestNewestDigestDeletedLocally pins the limit docs/security.md states ("What `audit
// verify` guarantees"): in a data folder, the newest digest deleted and an object it
// listed then changed leave a chain that ends an hour earlier and an object that looks
// not yet digested. On S3 the hour without a digest is named once it is 75 minutes
// old (TestS3TamperingIsNamed, "missing digest hour"), and Object Lock forbids the
// deletion.
func TestNewestDigestDeletedLocally(t *testing.T) {
	e := newLocalEnv(t)
	hour := time.Now().UTC().Truncate(time.Hour)
	// A chain begun two hours before the records, then continued to the end of their
	// hour: the newest digest lists their Parquet file.
	e.now = hour.Add(-55 * time.Minute)
	if _, err := e.writer().WriteDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.now = hour.Add(time.Hour + 5*time.Minute)
	names, err := e.writer().WriteDue(context.Background())
	if err != nil || len(names) == 0 {
		t.Fatalf("WriteDue: %v %v", names, err)
	}
	newest := names[len(names)-1]
	b, _ := e.store.Read(context.Background(), newest)
	d, err := Decode(b)
	if err != nil || len(d.Objects) != 1 || e.verify(t).Records != 5 {
		t.Fatalf("the newest digest %s lists %+v (%v)", newest, d, err)
	}
	if err := os.Remove(filepath.Join(e.dir, newest)); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(e.dir, d.Objects[0].Path)
	pq, _ := os.ReadFile(obj)
	pq[len(pq)/2] ^= 1
	if err := os.WriteFile(obj, pq, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := e.verify(t); !rep.Intact() || rep.Pending != 1 {
		t.Fatalf("the limit changed (update docs/security.md): %+v", rep)
	}
}

// TestWriterDoesNotRestartARemovedChain: with its key kept, a data folder whose
// digests were removed gets no new chain (which would list the objects as they are
// now and verify intact); audit verify keeps naming no_digests.
func TestWriterDoesNotRestartARemovedChain(t *testing.T) {
	e := newLocalEnv(t)
	if !e.signer.Created() {
		t.Fatal("a new folder's key was not reported as created")
	}
	writeAll(t, e.writer())
	if err := os.RemoveAll(filepath.Join(e.dir, "audit-digest")); err != nil {
		t.Fatal(err)
	}
	signer, err := LoadOrCreateFileSigner(e.dir)
	if err != nil || signer.Created() {
		t.Fatalf("reloaded key: created %v, %v", signer != nil && signer.Created(), err)
	}
	w := e.writer()
	w.Continue = !signer.Created()
	if names, err := w.WriteDue(context.Background()); !errors.Is(err, ErrChainGone) || len(names) != 0 {
		t.Fatalf("WriteDue after the digests were removed: %v, %v", names, err)
	}
	if rep := e.verify(t); !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == ProblemNoDigests }) {
		t.Fatalf("verify: %+v", rep)
	}
}

// TestTamperingBesideAnObjectOfTheHourBefore: a chain whose first window starts in
// the hour after its first object's partition still counts that partition, and the
// records' times in it, as digested: a copy put beside the file, or a file of a later
// hour holding records of that hour, is added. The writer compacts the file into
// Parquet before it lists it, and the Parquet file's modification time is the real
// clock's, which starts the chain. So the partition is the hour before the real one,
// and the writer's clock is set hours ahead, far enough that its last window closes
// after that Parquet file even when the test crosses an hour (a fixed date here
// stopped working once the real clock passed it).
func TestTamperingBesideAnObjectOfTheHourBefore(t *testing.T) {
	hour := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	written := hour.Add(time.Hour + 24*time.Second) // 24 s into the next hour
	now := hour.Add(3*time.Hour + 30*time.Minute)
	later := now.Truncate(time.Hour) // a later hour's partition
	records := func(at time.Time) []byte {
		var b []byte
		for i := range 5 {
			b = audit.AppendLine(b, audittest.Record(at.Add(time.Duration(i)*time.Second)))
		}
		return b
	}
	put := func(t *testing.T, dir, rel string, b []byte, mtime time.Time) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	partition := func(h time.Time) string { return h.Format("audit/dt=2006-01-02/hour=15/") }
	listed := partition(hour) + "listed.json"
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string) string
	}{
		{"a copy beside the listed file", func(t *testing.T, dir string) string {
			p := partition(hour) + "copy.json"
			put(t, dir, p, records(hour.Add(59*time.Minute+30*time.Second)), now.Add(-time.Minute))
			return p
		}},
		{"a later hour's file holding records of the listed hour", func(t *testing.T, dir string) string {
			p := partition(later) + "forged.json"
			put(t, dir, p, records(hour.Add(59*time.Minute+40*time.Second)), now.Add(-time.Minute))
			return p
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			put(t, dir, listed, records(hour.Add(59*time.Minute+30*time.Second)), written)
			signer, err := LoadOrCreateFileSigner(dir)
			if err != nil {
				t.Fatal(err)
			}
			e := &localEnv{dir: dir, store: LocalStore{Dir: dir}, signer: signer, now: now}
			if _, err := e.writer().WriteDue(context.Background()); err != nil {
				t.Fatal(err)
			}
			rep := e.verify(t)
			if !rep.Intact() || rep.Objects != 1 {
				t.Fatalf("untouched: %+v", rep)
			}
			// The case under test: the chain starts after the listed file's hour.
			if first, err := time.Parse(time.RFC3339, rep.FirstWindow); err != nil || !first.After(hour) {
				t.Fatalf("the chain's first window starts at %q, want after the partition hour %s", rep.FirstWindow, hour.Format(time.RFC3339))
			}
			p := tt.tamper(t, dir)
			rep = e.verify(t)
			if !slices.ContainsFunc(rep.Problems, func(q Problem) bool { return q.Kind == ProblemAdded && q.Path == p }) {
				t.Fatalf("want %s named %s; problems %+v", p, ProblemAdded, rep.Problems)
			}
		})
	}
}
