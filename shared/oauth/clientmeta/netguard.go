package clientmeta

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// specialUse lists the special-purpose ranges of the IANA IPv4 and IPv6 registries
// (RFC 6890 and its successors), which the CIMD draft's SSRF section forbids fetching
// from, plus ranges that translate to IPv4 (NAT64, 6to4, Teredo) and so could reach a
// private IPv4 address through a gateway.
var specialUse = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",       // "this network", includes the unspecified address
		"10.0.0.0/8",      // private (RFC 1918)
		"100.64.0.0/10",   // shared address space, CGNAT (RFC 6598)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata services
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"192.31.196.0/24", // AS112-v4
		"192.52.193.0/24", // AMT
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"192.175.48.0/24", // direct delegation AS112
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, includes broadcast
		// IPv6 (IPv4-mapped addresses are unmapped and checked as IPv4 first)
		"::/8",           // unspecified, loopback, IPv4-compatible and other reserved
		"64:ff9b::/96",   // NAT64
		"64:ff9b:1::/48", // local-use NAT64
		"100::/64",       // discard-only
		"2001::/23",      // IETF protocol assignments, includes Teredo 2001::/32
		"2001:db8::/32",  // documentation
		"2002::/16",      // 6to4
		"3fff::/20",      // documentation
		"5f00::/16",      // SRv6 SIDs
		"fc00::/7",       // unique local
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// addrAllowed says whether the fetcher may connect to a. Only public unicast addresses
// pass; allowLoopback (--dev) adds 127.0.0.0/8 and ::1 and nothing else, so a
// development server still cannot be steered at 10/8 or a metadata service.
func addrAllowed(a netip.Addr, allowLoopback bool) bool {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return false
	}
	if a.IsLoopback() {
		return allowLoopback
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return false
	}
	for _, p := range specialUse {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// errBlockedAddress is returned by the dialer; it names no address so that the
// description shown to the client reveals nothing of the network.
var errBlockedAddress = errors.New("clientmeta: the host does not resolve to a public address")

// lookupFunc resolves a host name; tests replace it to simulate DNS answers.
type lookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// guardedDialer resolves the host itself, drops every address that is not allowed and
// dials the remaining IP literals. The dialer's Control hook checks the address of the
// socket actually being connected, so no later resolution (DNS rebinding between the
// check and the connect) can reach an internal address.
type guardedDialer struct {
	allowLoopback bool
	lookup        lookupFunc
	timeout       time.Duration
}

func (g *guardedDialer) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !addrAllowed(ap.Addr(), g.allowLoopback) {
		return errBlockedAddress
	}
	return nil
}

func (g *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, err
	}
	var candidates []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		candidates = []netip.Addr{a}
	} else if candidates, err = g.lookup(ctx, "ip", host); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: g.timeout, Control: g.control}
	var firstErr error
	for _, a := range candidates {
		if !addrAllowed(a, g.allowLoopback) {
			continue
		}
		conn, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.WithZone(""), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		return nil, errBlockedAddress
	}
	return nil, firstErr
}
