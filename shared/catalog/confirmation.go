package catalog

import (
	"context"

	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Confirmation is what confirming a destructive tool's call means. The tool
// declares it once; the guard reads it for the preview of a call refused for
// lacking confirm: true, for the question it puts to a person (the elicit and
// require policies), and for the item version it seals into the answer's state,
// so the guard holds no tool's name, argument or scope. Every destructive tool
// declares one (TestDestructiveToolsDeclareConfirmation).
type Confirmation struct {
	// ReadScope is the scope a caller needs to be shown the preview: the preview
	// tells no more than the tool's read counterpart would.
	ReadScope string
	// ParentScope is the scope a preview needs to name Target.Parent; "" when the
	// item has no parent.
	ParentScope string
	// Typed is what a person types to confirm.
	Typed Typed
	// Load reads the item a call would destroy, named by the tool's ResourceArg.
	// parent asks for Target.Parent too (it costs a read). Its errors are the
	// store's: store.ErrNotFound for an unknown id, a tombstone or another
	// workspace's item.
	Load func(ctx context.Context, r store.Reader, ws, id string, parent bool) (Target, error)
}

// Target is the item a destructive call would destroy, as Load reads it.
type Target struct {
	// Kind, Key, Parent, Title and Comments are as in confirm.Item; Title is the
	// stored text, which the question and the preview make plain.
	Kind, Key, Parent, Title string
	Comments                 *int64
	// ID is the item's id, which the preview returns.
	ID string
	// Owner is whom MayDelete judges: the creator, the comment's author.
	Owner string
	// Version changes whenever the item does, so a person's answer is sealed to
	// the item they saw.
	Version string
}

// Typed is the value a person types to confirm: TypeKey or TypeWord.
type Typed struct{ word string }

// TypeKey has the person type the item's key, which names it: typing it shows
// they read which item it is.
var TypeKey = Typed{}

// TypeWord has the person type w, for an item that has no key of its own.
func TypeWord(w string) Typed { return Typed{word: w} }

// Item is the question's view of tg.
func (c Confirmation) Item(tg Target) confirm.Item {
	expect := c.Typed.word
	if expect == "" {
		expect = tg.Key
	}
	return confirm.Item{Kind: tg.Kind, Key: tg.Key, Parent: tg.Parent, Title: tg.Title, Comments: tg.Comments, Expect: expect}
}
