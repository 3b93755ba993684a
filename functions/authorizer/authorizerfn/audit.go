package authorizerfn

import (
	"context"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/guard"
)

// GuardRejecter writes the record of a refused request through a guard that has
// no store: guard.RecordRejected is the one builder and writer of a rejected
// request's record (tool facts from the guard's catalog, the record written within
// the request's time, a record the sink refused logged in full as audit_fallback),
// for the MCP function and the authorizer alike. Without a store it counts no usage.
type GuardRejecter struct{ Guard *guard.Guard }

// RecordRejected implements Rejecter.
func (r GuardRejecter) RecordRejected(ctx context.Context, req record.Request, err *apperr.Error) {
	r.Guard.RecordRejected(ctx, guard.Request{
		Principal: req.Principal, Tool: req.Tool, Transport: req.Transport,
		RequestID: req.RequestID, JSONRPCID: req.JSONRPCID,
		ClientName: req.ClientName, ClientVersion: req.ClientVersion, ProtocolVersion: req.ProtocolVersion,
		UserAgent: req.UserAgent, SourceIP: req.SourceIP,
	}, err)
}
