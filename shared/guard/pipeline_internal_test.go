package guard

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestStepsAreTheDocumentedOrder: the pipeline's one table of steps, which both the
// sequential and the overlapped order run, is the order docs/architecture.md section
// 6 gives a newcomer, step for step, followed by the audit record (finish, which is
// not a step: it runs whatever the steps decided). Every entry of the table is a
// step that runs.
func TestStepsAreTheDocumentedOrder(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## 6. ")
	end := strings.Index(text, "\n### Invariants")
	if start < 0 || end < start {
		t.Fatal("docs/architecture.md has no section 6 followed by its invariants")
	}
	var documented []string
	item := regexp.MustCompile("(?m)^[0-9]+\\. `([^`]+)`")
	for _, m := range item.FindAllStringSubmatch(text[start:end], -1) {
		documented = append(documented, m[1])
	}

	var want []string
	for i, s := range steps {
		if s.name == "" || s.run == nil {
			t.Fatalf("step %d has no name or no run", i)
		}
		want = append(want, s.name)
	}
	want = append(want, "record")
	if !slices.Equal(documented, want) {
		t.Fatalf("section 6 lists\n %q\nthe pipeline runs\n %q", documented, want)
	}

	// The invoke step is last: every check that can refuse decides before the
	// handler's answer can be used, in either order.
	if !steps[numSteps-1].writes || steps[numSteps-1].roundTrip {
		t.Fatal("the last step is not the handler, run inline behind its write gate")
	}
	// The member check's role is read through memberRole, which waits for the
	// step that yields it; it must come before every step that asks for it.
	if stepRole > stepHuman || stepRole > stepInvoke {
		t.Fatal("the role step comes after a step that reads the role")
	}
}
