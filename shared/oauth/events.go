package oauth

import (
	"context"
	"net"
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
)

// event is one authorization audit record before the common fields are filled.
type event struct {
	action              string
	denied              apperr.Code // "" for success
	clientID, name      string
	workspace, user     string
	tokenID, grantID    string
	scopes, requested   []string
	requestID, ua, addr string
}

// record files ev in the audit log. The record goes to the same sink as tool
// calls, with EventType authorization and Transport oauth. Nothing is handed out
// unless its record was written: callers treat an error as a failed request.
func (s *Server) record(ctx context.Context, ev event) error {
	now := s.now()
	rec := audit.Record{
		EventID:        audit.NewEventIDAt(now),
		EventVersion:   audit.EventVersion,
		Timestamp:      audit.FormatTime(now),
		Outcome:        audit.OutcomeSuccess,
		ScopesProvided: slices.Clone(ev.scopes),
		ScopesRequired: slices.Clone(ev.requested),
		WorkspaceID:    ev.workspace,
		UserID:         ev.user,
		TokenID:        ev.tokenID,
		// The grant is what an authorization event acts on.
		ResourceID: ev.grantID,
		RequestID:  ev.requestID,
		ClientName: bound(ev.name, 256),
		UserAgent:  bound(ev.ua, 512),
		SourceIP:   ev.addr,
		Transport:  audit.TransportOAuth,
		ClientID:   bound(ev.clientID, 2048),
		EventType:  audit.EventAuthorization,
		Action:     ev.action,
	}
	if ev.denied != "" {
		rec.Outcome, rec.Reason = string(ev.denied.Outcome()), string(ev.denied)
	}
	if err := s.cfg.Sink.Write(context.WithoutCancel(ctx), rec); err != nil {
		s.log.ErrorContext(ctx, "oauth: audit write failed", "action", ev.action, "client_id", ev.clientID, "err", err)
		return err
	}
	return nil
}

// event starts an event with the request's transport facts.
func (q *request) event(action string) event {
	return event{
		action:    action,
		requestID: q.w.Header().Get("X-Request-Id"), // set by the mounting handler
		ua:        q.r.UserAgent(),
		addr:      sourceIP(q.r.RemoteAddr),
	}
}

func sourceIP(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// bound cuts s to at most n bytes at a rune boundary.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// A cut inside a rune leaves invalid bytes at the end, which ToValidUTF8 drops.
	return strings.ToValidUTF8(s[:n], "")
}
