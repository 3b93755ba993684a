package authorizerfn

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// ToolLookup finds a tool's catalog entry (catalog.Catalog does).
type ToolLookup interface {
	Lookup(name string) (catalog.Tool, bool)
}

// SinkRejecter writes the record of a refused request to an audit sink, built by
// shared/audit/record exactly as the MCP function builds its own (tool metadata
// from the catalog).
type SinkRejecter struct {
	Tools  ToolLookup
	Sink   audit.Sink
	Now    func() time.Time
	Logger *slog.Logger
}

// RecordRejected implements Rejecter. A record the sink cannot take is logged in
// full (audit_fallback), the convention the guard and the Kinesis sink share, so it
// can still be recovered.
func (s SinkRejecter) RecordRejected(ctx context.Context, req record.Request, err *apperr.Error) {
	if err == nil {
		err = apperr.Internal(fmt.Errorf("RecordRejected called without an error"))
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	started := time.Now()
	r := record.Start(req)
	if t, ok := s.Tools.Lookup(req.Tool); ok {
		record.Describe(&r, t.Annotations.ReadOnly, t.Annotations.Destructive, t.Scopes)
	}
	record.Finish(&r, now().UTC(), err.Code, false, time.Since(started))
	// The caller may have gone away; the record is still written, within the time
	// the request had.
	wctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(wctx, dl)
		defer cancel()
	}
	if werr := s.Sink.Write(wctx, r); werr != nil {
		log.Error("audit record not delivered", "audit_fallback", true, "record", r, "err", werr)
	}
}
