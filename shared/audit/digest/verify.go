package digest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kinds of Problem. They are stable: `aacmcp audit verify --json` prints them.
const (
	ProblemModified      = "modified"       // an object's bytes differ from its digest's SHA-256 or size
	ProblemMissing       = "missing"        // an object a digest lists is gone
	ProblemAdded         = "added"          // an object no digest lists, written during a digested window
	ProblemChainBroken   = "chain_broken"   // a digest does not name its predecessor's path, hash and signature
	ProblemBadSignature  = "bad_signature"  // a digest's signature does not verify, or its key is unknown
	ProblemMalformed     = "malformed"      // a digest that does not decode, or a stray file among the digests
	ProblemMissingDigest = "missing_digest" // an hour no digest covers
	ProblemNoDigests     = "no_digests"     // objects, or a signing key, and not one digest
	ProblemFutureTime    = "future_mtime"   // an object last written after the verifier's clock
	ProblemDigestDeleted = "digest_deleted" // a kept version of a digest that was deleted or replaced (S3 versions)
)

// MaxClockSkew is how far after the verifier's clock an object's modification time
// may be before it is an error (S3's LastModified comes from S3's clock).
const MaxClockSkew = 5 * time.Minute

// Problem is one finding, about one file.
type Problem struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Detail string `json:"detail"`
}

// Report is the outcome of Verify.
type Report struct {
	Store       string   `json:"store"`
	From        string   `json:"from,omitempty"`
	To          string   `json:"to"`
	Digests     int      `json:"digests"`
	FirstWindow string   `json:"first_window_start,omitempty"`
	LastWindow  string   `json:"last_window_end,omitempty"`
	Objects     int      `json:"objects"`
	Records     int64    `json:"records"`
	Pending     int      `json:"objects_not_yet_digested"`    // written after the last digest, of hours after it
	Uncovered   int      `json:"objects_before_first_digest"` // written before digests began
	Late        int      `json:"late_objects"`                // listed, and more than MaxRecordDelay late
	KeyIDs      []string `json:"key_ids"`
	// Versions is what the digests' version history showed: "checked" (S3 with
	// versioning), "off" (a bucket without), "" for a data folder, or why it could
	// not be read.
	Versions string    `json:"digest_versions,omitempty"`
	Problems []Problem `json:"problems"`
	// Verified are the paths of the objects found as their digests list them: what
	// `audit query --verified` reads.
	Verified map[string]bool `json:"-"`
}

// Intact reports whether Verify found nothing wrong.
func (r *Report) Intact() bool { return len(r.Problems) == 0 }

// Verifier checks a store against its digests.
type Verifier struct {
	Store Store
	Keys  Keys
	Now   func() time.Time
	// Lag is how long after an hour ends a digest for it must exist; 0 checks only
	// gaps between digests (the data folder: no digest is written while no server
	// runs). The scheduled function writes S3 digests 15 minutes past the hour.
	Lag time.Duration
	// Progress, when set, is told how many objects have been checked of how many.
	Progress func(done, total int)
	// Delivery is how long after its hour ends an object of that hour may still come
	// (the writer's Grace): such an object, written after the last digest, waits for
	// the next one. Written later into a digested hour, it is added.
	Delivery time.Duration
	// Keyed says a signing key exists (the data folder's key, a pinned key): without
	// a single digest that is an error even when there is no object.
	Keyed bool
}

type loaded struct {
	name  string
	bytes []byte
	d     *Digest // nil when it does not decode
}

// Verify checks every digest whose window overlaps [from, to) (a zero from: from
// the beginning), the chain into the first of them, and every object those digests
// list or that was written during their windows.
func (v *Verifier) Verify(ctx context.Context, from, to time.Time) (*Report, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if to.IsZero() {
		to = now()
	}
	rep := &Report{Store: v.Store.String(), To: FormatTime(to), Problems: []Problem{}, KeyIDs: []string{}}
	if !from.IsZero() {
		rep.From = FormatTime(from)
	}
	add := func(kind, path, format string, a ...any) {
		rep.Problems = append(rep.Problems, Problem{Kind: kind, Path: path, Detail: fmt.Sprintf(format, a...)})
	}

	names, err := v.Store.Digests(ctx)
	if err != nil {
		return nil, err
	}
	if vs, ok := v.Store.(versioned); ok {
		on, changes, err := vs.DigestHistory(ctx)
		switch {
		case err != nil:
			rep.Versions = "not read: " + err.Error()
		case !on:
			rep.Versions = "off"
		default:
			rep.Versions = "checked"
		}
		for _, c := range changes {
			// Only the range checked: past the retention, the bucket's lifecycle
			// expiration puts delete markers on old digests itself.
			if start, end := nameWindow(c.Path); IsName(c.Path) && (!end.After(from) || !start.Before(to)) {
				continue
			}
			what := "an earlier version, replaced"
			if c.DeleteMarker {
				what = "a delete marker: the digest was deleted"
			}
			add(ProblemDigestDeleted, c.Path, "%s (version %s, %s); the writer never deletes or replaces a digest", what, c.VersionID, FormatTime(c.LastModified))
		}
	}
	var all []loaded
	for _, n := range names {
		if !IsName(n) {
			add(ProblemMalformed, n, "not a digest name: a file no digest writer made")
			continue
		}
		b, err := v.Store.Read(ctx, n)
		if err != nil {
			return nil, err
		}
		d, derr := Decode(b)
		if derr != nil {
			add(ProblemMalformed, n, "%v", derr)
		}
		all = append(all, loaded{name: n, bytes: b, d: d})
	}

	// The window of a digest that does not decode is read from its name, so the
	// hours it covered are not also reported as missing.
	window := func(l loaded) (time.Time, time.Time) {
		if l.d != nil {
			return l.d.Start(), l.d.End()
		}
		return nameWindow(l.name)
	}

	listed := map[string]bool{}
	type check struct {
		obj    Object
		digest string
	}
	var checks []check
	keys := map[string]bool{}
	for i, l := range all {
		start, end := window(l)
		if l.d != nil {
			for _, o := range l.d.Objects {
				listed[o.Path] = true
			}
		}
		if !end.After(from) || !start.Before(to) {
			continue
		}
		rep.Digests++
		if rep.FirstWindow == "" {
			rep.FirstWindow = FormatTime(start)
		}
		rep.LastWindow = FormatTime(end)

		// The link to the previous digest, and the time between the two.
		var prev *loaded
		if i > 0 {
			prev = &all[i-1]
		}
		if l.d != nil {
			switch {
			case prev == nil && l.d.PreviousPath != "":
				add(ProblemChainBroken, l.name, "names previous digest %s, which does not exist", l.d.PreviousPath)
			case prev != nil && l.d.PreviousPath == "":
				add(ProblemChainBroken, l.name, "names no previous digest, but %s precedes it", prev.name)
			case prev != nil && l.d.PreviousPath != prev.name:
				add(ProblemChainBroken, l.name, "names previous digest %s, which does not exist; the one before it is %s", l.d.PreviousPath, prev.name)
			case prev != nil && l.d.PreviousSHA256 != Hash(prev.bytes):
				add(ProblemChainBroken, l.name, "the SHA-256 it holds of %s does not match that file", prev.name)
			case prev != nil && prev.d != nil && l.d.PreviousSignature != prev.d.Signature:
				add(ProblemChainBroken, l.name, "the signature it holds of %s does not match that digest's", prev.name)
			}
		}
		if prev != nil {
			_, pend := window(*prev)
			v.gap(add, pend, start)
		}

		if l.d == nil {
			continue
		}
		keys[l.d.KeyID] = true
		if err := v.checkSignature(ctx, l.d); err != nil {
			add(ProblemBadSignature, l.name, "%v", err)
		}
		for _, o := range l.d.Objects {
			checks = append(checks, check{o, l.name})
		}
	}
	rep.KeyIDs = slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	})

	// Hours after the last digest that should have one by now.
	if v.Lag > 0 && len(all) > 0 {
		_, last := window(all[len(all)-1])
		due := now().Add(-v.Lag).UTC().Truncate(time.Hour)
		if due.After(to) {
			due = to
		}
		v.gap(add, last, due)
	}

	rep.Verified = map[string]bool{}
	for i, c := range checks {
		if v.Progress != nil {
			v.Progress(i, len(checks))
		}
		got, err := describe(ctx, v.Store, c.obj.Path)
		if errors.Is(err, ErrNotFound) {
			add(ProblemMissing, c.obj.Path, "listed in %s, no longer in the log", c.digest)
			continue
		}
		if err != nil {
			return nil, err
		}
		if got.SHA256 != c.obj.SHA256 || got.Size != c.obj.Size {
			add(ProblemModified, c.obj.Path, "SHA-256 %s (%d bytes), %s lists %s (%d bytes)", got.SHA256, got.Size, c.digest, c.obj.SHA256, c.obj.Size)
			continue
		}
		rep.Verified[c.obj.Path] = true
		rep.Objects++
		rep.Records += c.obj.Records
		if c.obj.Late {
			rep.Late++
		}
	}
	if v.Progress != nil {
		v.Progress(len(checks), len(checks))
	}

	objs, err := v.Store.Objects(ctx)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		switch {
		case len(objs) > 0:
			add(ProblemNoDigests, Prefix, "audit objects (%d, the first %s) and not one digest: the digests were removed, or none was ever written",
				len(objs), objs[0].Path)
		case v.Keyed:
			add(ProblemNoDigests, Prefix, "a signing key exists and not one digest: the first digest is written when the key is made")
		}
	}
	var firstStart, lastEnd time.Time
	if len(all) > 0 {
		firstStart, _ = window(all[0])
		_, lastEnd = window(all[len(all)-1])
	}
	// Digested time is the chain's windows and the partition hours of the objects its
	// digests list: the first window starts when the writer first ran, which can be
	// after the hour of the objects it then listed (a chain started at 00:00:30 lists
	// the hour before's file), and a copy put beside a listed file is as forged as one
	// put inside a window.
	hours := map[time.Time]bool{}
	for p := range listed {
		if h, ok := PartitionHour(p); ok {
			hours[h] = true
		}
	}
	// inside reports whether [a, b] meets digested time.
	inside := func(a, b time.Time) bool {
		if len(all) == 0 {
			return false
		}
		if !b.Before(firstStart) && a.Before(lastEnd) {
			return true
		}
		for h := range hours {
			if !b.Before(h) && a.Before(h.Add(time.Hour)) {
				return true
			}
		}
		return false
	}
	for _, o := range objs {
		// A time set ahead hides an object from every window; nothing writes one.
		if o.ModTime.After(now().Add(MaxClockSkew)) {
			add(ProblemFutureTime, o.Path, "last written %s, after the verifier's clock (%s)", FormatTime(o.ModTime), FormatTime(now()))
			continue
		}
		if listed[o.Path] {
			continue
		}
		hour, _ := PartitionHour(o.Path)
		hourEnd := hour.Add(time.Hour - time.Nanosecond)
		// Outside the range checked by both its modification time and its hour.
		if (o.ModTime.Before(from) || !o.ModTime.Before(to)) && (hourEnd.Before(from) || !hour.Before(to)) {
			continue
		}
		if o.Open && !o.ModTime.Before(lastEnd) {
			rep.Pending++ // a writer still holds it; digested once closed
			continue
		}
		// Where it claims to be in time: its modification time, its partition's hour
		// and its records' timestamps. Any of them inside digested time, and no digest
		// lists it: it was put there after that time was digested. The one exception
		// is an ordinary late delivery: written after the last digest, within Delivery
		// of its hour's end, its records inside that hour.
		var why string
		if inside(o.ModTime, o.ModTime) {
			why = "written " + FormatTime(o.ModTime)
		} else {
			first, last, ok := v.recordTimes(ctx, o.Path)
			outOfHour := ok && (first.Before(hour) || last.After(hourEnd))
			delivered := !o.ModTime.Before(lastEnd) && o.ModTime.Before(hour.Add(time.Hour+v.Delivery))
			switch {
			case outOfHour && inside(first, last):
				why = fmt.Sprintf("holding records of %s to %s, outside its partition's hour", FormatTime(first), FormatTime(last))
			case inside(hour, hourEnd) && !delivered:
				why = fmt.Sprintf("in the partition of %s, written %s (more than %s after that hour)", FormatTime(hour), FormatTime(o.ModTime), v.Delivery)
			}
		}
		switch {
		case why != "":
			add(ProblemAdded, o.Path, "%s, inside digested time (%s to %s), and listed in no digest", why, FormatTime(firstStart), FormatTime(lastEnd))
		case len(all) > 0 && o.ModTime.Before(firstStart):
			rep.Uncovered++
		default:
			rep.Pending++
		}
	}
	return rep, nil
}

// recordTimes reads an object's first and last record timestamps; ok is false when
// it holds none that parse (it is then judged by its other times alone).
func (v *Verifier) recordTimes(ctx context.Context, p string) (first, last time.Time, ok bool) {
	o, err := describe(ctx, v.Store, p)
	if err != nil {
		return first, last, false
	}
	first, err1 := time.Parse(time.RFC3339Nano, o.FirstTimestamp)
	last, err2 := time.Parse(time.RFC3339Nano, o.LastTimestamp)
	return first, last, err1 == nil && err2 == nil
}

// nameWindow reads a window's bounds from a digest's name (IsName).
func nameWindow(name string) (start, end time.Time) {
	const stamp = "20060102T150405.000000000Z"
	if len(name) < 2*len(stamp)+len("_.json") {
		return start, end
	}
	base := name[len(name)-len(stamp+"_"+stamp+".json"):]
	start, _ = time.Parse(stamp, base[:len(stamp)])
	end, _ = time.Parse(stamp, base[len(stamp)+1:2*len(stamp)+1])
	return start, end
}

// gap reports each hour of [from, to) as without a digest.
func (v *Verifier) gap(add func(kind, path, format string, a ...any), from, to time.Time) {
	for h := from.UTC(); h.Before(to); h = h.Truncate(time.Hour).Add(time.Hour) {
		end := h.Truncate(time.Hour).Add(time.Hour)
		if end.After(to) {
			end = to
		}
		add(ProblemMissingDigest, fmt.Sprintf("%sdt=%s/hour=%02d/", Prefix, h.Format(time.DateOnly), h.Hour()),
			"no digest covers %s to %s", FormatTime(h), FormatTime(end))
	}
}

func (v *Verifier) checkSignature(ctx context.Context, d *Digest) error {
	pub, err := v.Keys.PublicKey(ctx, d.KeyID)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(d.Signature)
	if err != nil || !checkSignature(pub, d.Algorithm, SignedBytes(d), sig) {
		return fmt.Errorf("the %s signature by %s does not verify", d.Algorithm, d.KeyID)
	}
	return nil
}
