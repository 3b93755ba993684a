package confirm

import (
	"fmt"
	"strings"
)

// Policy is a workspace's destructive_confirmation setting.
type Policy string

const (
	// PolicyFlag is the spec's behaviour: confirm: true suffices.
	PolicyFlag Policy = "flag"
	// PolicyElicit asks the person when the client can elicit, else behaves as flag.
	PolicyElicit Policy = "elicit"
	// PolicyRequire asks the person, and refuses clients that cannot elicit.
	PolicyRequire Policy = "require"
	// PolicyApprove has the person approve on aacmcp's own page (shared/approval),
	// which no client or model can answer for them; every client is sent there.
	PolicyApprove Policy = "approve"
)

// Policies lists the values in documentation order.
var Policies = []Policy{PolicyFlag, PolicyElicit, PolicyRequire, PolicyApprove}

// ParsePolicy accepts the values of Policies; "" is the default, flag.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicyFlag, nil
	case PolicyFlag, PolicyElicit, PolicyRequire, PolicyApprove:
		return p, nil
	}
	return "", fmt.Errorf("destructive confirmation must be one of %s, got %q", Names(", "), s)
}

// Names joins the policies' names with sep, for usage text and errors.
func Names(sep string) string {
	out := make([]string, len(Policies))
	for i, p := range Policies {
		out[i] = string(p)
	}
	return strings.Join(out, sep)
}
