package formation

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// A member's components reach its callees at virtual addresses (§22.9):
// http://<callee>.formation.invalid, routed by the runtime to the callee's
// door with the edge's token. The roster is the grant: the component never
// holds a token or a real port, and no network.allow entry is needed.
const (
	// VirtualDomain is the domain every virtual address lies under. It is
	// reserved (RFC 2606): no resolver answers for it, so nothing under it
	// can be reached except as the runtime routes it.
	VirtualDomain = "formation.invalid"
	// EnvPeers names a member's callees at their virtual addresses in the
	// environment of each of its WASM components.
	EnvPeers = "MURMUR_FORMATION_PEERS"
)

// VirtualURL is callee name's virtual address.
func VirtualURL(name string) string { return "http://" + name + "." + VirtualDomain }

// PeersEnv is MURMUR_FORMATION_PEERS: "name=http://<name>.formation.invalid"
// per callee in roster order, separated by single spaces; "" when there are
// none (the variable is then absent, never empty).
func (c *Callees) PeersEnv() string {
	var b strings.Builder
	for i, n := range c.Names() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n + "=" + VirtualURL(n))
	}
	return b.String()
}

// Target is where a request to a virtual address goes: the callee's door
// (its scheme and authority, from line 2) and what it carries there.
type Target struct {
	Member            string
	Scheme, Authority string
	// Token is the edge's formation token, sent as Authorization: Bearer.
	Token string
}

// Headers are the headers a routed request carries in place of any the
// component gave under these names (case-insensitively): the edge's token
// and the peer origin.
func (t *Target) Headers() [][2]string {
	return [][2]string{{"Authorization", "Bearer " + t.Token}, {doorapi.HeaderOrigin, string(doorapi.OriginPeer)}}
}

// RefusedError is a request to an address under formation.invalid that is
// no callee's virtual address: it is refused before any connection.
type RefusedError struct {
	Origin string // scheme://authority as asked
	Why    string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is under %s but %s", e.Origin, VirtualDomain, e.Why)
}

// Route decides a request to scheme://authority. An authority whose host
// is not formation.invalid or under it is none of the formation's: nil,
// nil. A callee's virtual address (host <callee>.formation.invalid in any
// case, scheme http, no port or port 80, no user information) answers its
// Target, waiting up to AddressWait for line 2; an error then means the
// address did not come. Anything else under formation.invalid is a
// *RefusedError. A nil Callees (a run that is no member, or a member with
// no callees) refuses every such host.
func (c *Callees) Route(ctx context.Context, scheme, authority string) (*Target, error) {
	hostport := authority
	userinfo := false
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hostport = true, authority[i+1:]
	}
	host, port, hasPort := hostport, "", false
	if !strings.HasPrefix(hostport, "[") { // an IPv6 literal is never under the domain
		if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
			host, port, hasPort = hostport[:i], hostport[i+1:], true
		}
	}
	host = strings.ToLower(host)
	if host != VirtualDomain && !strings.HasSuffix(host, "."+VirtualDomain) {
		return nil, nil
	}
	origin := scheme + "://" + authority
	refuse := func(why string, args ...any) (*Target, error) {
		return nil, &RefusedError{Origin: origin, Why: fmt.Sprintf(why, args...)}
	}
	name := strings.TrimSuffix(host, "."+VirtualDomain)
	switch {
	case !strings.EqualFold(scheme, "http"):
		return refuse("its scheme is not http; a callee is reached at %s", VirtualURL("<callee>"))
	case hasPort && port != "80":
		return refuse("its port is not 80; a callee is reached at %s", VirtualURL("<callee>"))
	case userinfo:
		return refuse("it carries user information")
	case host == VirtualDomain || strings.Contains(name, "."):
		return refuse("it names no member")
	case !c.Has(name):
		return refuse("'%s' is not a member this capsule may call", name)
	}
	addr, err := c.Address(ctx, name, AddressWait)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("member '%s' has no usable address", name)
	}
	return &Target{Member: name, Scheme: u.Scheme, Authority: u.Host, Token: c.Token(name)}, nil
}
