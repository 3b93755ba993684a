package confirm

import "fmt"

// Policy is a workspace's destructive_confirmation setting.
type Policy string

const (
	// PolicyFlag is the spec's behaviour: confirm: true suffices.
	PolicyFlag Policy = "flag"
	// PolicyElicit asks the person when the client can elicit, else behaves as flag.
	PolicyElicit Policy = "elicit"
	// PolicyRequire asks the person, and refuses clients that cannot elicit.
	PolicyRequire Policy = "require"
)

// Policies lists the values in documentation order.
var Policies = []Policy{PolicyFlag, PolicyElicit, PolicyRequire}

// ParsePolicy accepts the three values; "" is the default, flag.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicyFlag, nil
	case PolicyFlag, PolicyElicit, PolicyRequire:
		return p, nil
	}
	return "", fmt.Errorf("destructive confirmation must be flag, elicit or require, got %q", s)
}
