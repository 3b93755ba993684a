package approval

import (
	"context"
	"errors"
	"time"

	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Desk is the page's side of an approval: it opens a link token, reads what it
// would destroy by the tool's declaration (catalog.Confirmation), and records the
// person's decision. The page (shared/oauth) signs the person in and renders;
// every judgement of the approval is here.
type Desk struct {
	Keys    *confirm.Keyring
	Store   store.Approvals
	Items   store.Reader
	Catalog *catalog.Catalog
}

// Refusals of Open and Decide, each a page of its own.
var (
	// ErrInvalid: the token is malformed, forged, edited or sealed under an
	// unknown key.
	ErrInvalid = errors.New("approval: the link is not valid")
	// ErrExpired: the token or its approval is past confirm.Lifetime.
	ErrExpired = errors.New("approval: the link has expired")
	// ErrReplaced: the binding holds another approval now (a later link).
	ErrReplaced = errors.New("approval: the link was replaced by a newer one")
	// ErrDecided: the approval was already granted, denied or used.
	ErrDecided = errors.New("approval: the approval was already decided")
	// ErrChanged: the item was edited or deleted since the call asked.
	ErrChanged = errors.New("approval: the item changed since the call asked")
	// ErrWrongKey: Approve was pressed with another value typed than the key.
	ErrWrongKey = errors.New("approval: the typed value does not match")
)

// Reason is the stable audit word of a Desk error ("" for others).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrInvalid):
		return "invalid"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrReplaced):
		return "replaced"
	case errors.Is(err, ErrDecided):
		return "decided"
	case errors.Is(err, ErrChanged):
		return "changed"
	case errors.Is(err, ErrWrongKey):
		return "wrong_key"
	}
	return ""
}

// Ask is an approval as the page shows it.
type Ask struct {
	Claims   confirm.Claims
	Binding  string
	Approval store.Approval
	// Item is what will be destroyed, from the tool's declaration, and Expect
	// what the person types to approve.
	Item   confirm.Item
	Expect string
	// Question is the sentence the form elicitation would ask.
	Question string
	q        confirm.Question
}

// Open reads the approval token names, as of now. Every refusal is one of the
// errors above or a store failure.
func (d *Desk) Open(ctx context.Context, token string, now time.Time) (Ask, error) {
	tok, err := ParseToken(token)
	if err != nil {
		return Ask{}, ErrInvalid
	}
	c, err := d.Keys.Open(tok, now)
	switch {
	case errors.Is(err, confirm.ErrExpired):
		return Ask{}, ErrExpired
	case err != nil:
		return Ask{}, ErrInvalid
	}
	a := Ask{Claims: c, Binding: Binding(c)}
	a.Approval, err = d.Store.GetApproval(ctx, c.Workspace, a.Binding)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Sealed by the server, and never stored (or long expired): nothing to decide.
		return Ask{}, ErrExpired
	case err != nil:
		return Ask{}, err
	case a.Approval.Nonce != c.Nonce:
		return Ask{}, ErrReplaced
	case !now.Before(a.Approval.ExpiresAt):
		return Ask{}, ErrExpired
	case a.Approval.Status != store.ApprovalPending:
		return a, ErrDecided
	}
	t, ok := d.Catalog.Lookup(c.Tool)
	if !ok || t.Confirm == nil {
		return Ask{}, ErrInvalid
	}
	tg, err := t.Confirm.Load(ctx, d.Items, c.Workspace, a.Approval.Target, true)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Ask{}, ErrChanged
	case err != nil:
		return Ask{}, err
	case tg.Version != c.ItemVersion:
		return Ask{}, ErrChanged
	}
	a.Item = t.Confirm.Item(tg)
	q, err := confirm.Ask(a.Item)
	if err != nil {
		return Ask{}, err
	}
	a.Expect, a.Question, a.q = q.Expect, q.Message, q
	return a, nil
}

// Mine reports whether one of the signed-in person's accounts is the call's
// member: only they may decide.
func (a Ask) Mine(accounts []store.OAuthAccount) bool {
	for _, acc := range accounts {
		if acc.WorkspaceID == a.Claims.Workspace && acc.UserID == a.Claims.User {
			return true
		}
	}
	return false
}

// Decide records the person's answer: grant (with typed, which must be the
// key, judged as the form elicitation judges its answer) or deny. by is the
// signed-in identity, from the browser's address. The store's conditional
// write makes the decision once.
func (d *Desk) Decide(ctx context.Context, a Ask, grant bool, typed, by, from string, now time.Time) error {
	status := store.ApprovalDenied
	if grant {
		if a.q.Check(confirm.Answer{Action: "accept", Typed: typed}) != nil {
			return ErrWrongKey
		}
		status = store.ApprovalGranted
	}
	err := d.Store.DecideApproval(ctx, a.Claims.Workspace, a.Binding, a.Claims.Nonce, status, by, from, now)
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return ErrDecided
	}
	return err
}
