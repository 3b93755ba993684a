package clientmeta

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Internationalized hosts. A host such as "clаude.ai", whose "а" is Cyrillic, looks
// like the real one on any page that shows it, so a redirect URI, client_uri or
// client id URL with it would let a client pass for another. Such hosts are refused
// (hostProblem) where URLs enter this package, and every host a page shows goes
// through DisplayHost, which gives its A-label (punycode): "xn--" plus ASCII, which
// no script can disguise and which an HTTP header can carry.
//
// The rule is UTS #39's "highly restrictive" level, as browsers apply it before
// they show a host in Unicode: each label is written in one script, or in Latin
// with Han, Hiragana and Katakana (Japanese), Han and Bopomofo (Chinese), or Han
// and Hangul (Korean). Common characters (digits, the hyphen, the prolonged sound
// mark) and inherited ones (combining marks) belong to every script. A label
// written wholly in another script ("пример") is accepted and shown as its
// A-label.

// allowedMixes are the script sets a label may combine (UTS #39 section 5.2).
var allowedMixes = [][]*unicode.RangeTable{
	{unicode.Latin, unicode.Han, unicode.Hiragana, unicode.Katakana},
	{unicode.Latin, unicode.Han, unicode.Bopomofo},
	{unicode.Latin, unicode.Han, unicode.Hangul},
}

// hostProblem says what is wrong with host (a host name without port, as
// url.URL.Hostname gives it), or "" when nothing is. An ASCII host without an
// A-label is not looked at here: the URL checks around this call judge it.
func hostProblem(host string) string {
	if !isIDN(host) {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	// Lookup validates as RFC 5891 section 5 asks (and maps case), and decodes
	// A-labels: "xn--clude-5ve.ai" is judged as the "clаude.ai" it stands for.
	u, err := idna.Lookup.ToUnicode(host)
	if err != nil {
		return "has a host that is not a valid internationalized domain name"
	}
	for label := range strings.SplitSeq(u, ".") {
		if mixesScripts(label) {
			return fmt.Sprintf("has a host whose label %s mixes scripts, as a look-alike of another name does", quoteShort(strings.ToValidUTF8(label, "?")))
		}
	}
	return ""
}

// isIDN reports a host with a non-ASCII byte or an A-label ("xn--", any case).
func isIDN(host string) bool {
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			return true
		}
	}
	for label := range strings.SplitSeq(host, ".") {
		if len(label) >= 4 && strings.EqualFold(label[:4], "xn--") {
			return true
		}
	}
	return false
}

// mixesScripts reports a label whose letters come from more scripts than one of
// the allowed combinations holds.
func mixesScripts(label string) bool {
	var seen []*unicode.RangeTable
	for _, r := range label {
		t := scriptOf(r)
		if t == nil || containsTable(seen, t) {
			continue
		}
		seen = append(seen, t)
	}
	if len(seen) <= 1 {
		return false
	}
	for _, mix := range allowedMixes {
		all := true
		for _, t := range seen {
			all = all && containsTable(mix, t)
		}
		if all {
			return false
		}
	}
	return true
}

// scriptOf is r's script, nil for Common and Inherited (and unassigned) runes.
func scriptOf(r rune) *unicode.RangeTable {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return unicode.Latin
		}
		return nil
	}
	for name, t := range unicode.Scripts {
		if name == "Common" || name == "Inherited" {
			continue
		}
		if unicode.Is(t, r) {
			return t
		}
	}
	return nil
}

func containsTable(ts []*unicode.RangeTable, t *unicode.RangeTable) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// DisplayHost is how a page or a header shows hostport (a URL's host, with or
// without a port): internationalized names as their A-labels. A host that is not a
// valid internationalized name (one stored before hostProblem refused it) is shown
// with its non-ASCII characters escaped, never as the characters themselves.
func DisplayHost(hostport string) string {
	host := (&url.URL{Host: hostport}).Hostname()
	if !isIDN(host) {
		return hostport
	}
	a, err := idna.Lookup.ToASCII(host)
	if err != nil || hostProblem(host) != "" {
		a = strings.Trim(fmt.Sprintf("%+q", host), `"`)
	}
	if port := (&url.URL{Host: hostport}).Port(); port != "" {
		return net.JoinHostPort(a, port)
	}
	return a
}
