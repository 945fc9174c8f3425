package formation

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
)

// calleesAt is a member calling writer and critic, whose line 2 has come.
func calleesAt(t *testing.T, line2 string) *Callees {
	t.Helper()
	l1 := &Line1{Member: "lead", Calls: []Call{{Name: "writer", Token: "tw"}, {Name: "critic", Token: "tc"}}}
	return NewCallees(l1, bufio.NewReader(strings.NewReader(line2+"\n")), nil)
}

func TestPeersEnv(t *testing.T) {
	c := calleesAt(t, `{"addresses":[]}`)
	if got := c.PeersEnv(); got != "writer=http://writer.formation.invalid critic=http://critic.formation.invalid" {
		t.Fatalf("PeersEnv %q", got)
	}
	none := NewCallees(&Line1{Member: "lead", Calls: []Call{}}, nil, nil)
	var nilC *Callees
	if none.PeersEnv() != "" || nilC.PeersEnv() != "" {
		t.Fatal("a member without callees has peers")
	}
}

// TestRoute: only http://<callee>.formation.invalid[:80] (host in any case,
// no user information) is routed, to the callee's door with the edge's
// token; any other host under formation.invalid is refused, and every
// other host is left alone.
func TestRoute(t *testing.T) {
	c := calleesAt(t, `{"addresses":[{"name":"writer","url":"http://127.0.0.1:4101"},{"name":"critic","url":"http://127.0.0.1:4102"}]}`)
	cases := []struct {
		name, scheme, authority string
		member, authorityTo     string // routed: the callee and its door
		refused                 string // refused: a *RefusedError with this text
	}{
		{name: "callee", scheme: "http", authority: "writer.formation.invalid", member: "writer", authorityTo: "127.0.0.1:4101"},
		{name: "any case", scheme: "HTTP", authority: "CRITIC.Formation.INVALID", member: "critic", authorityTo: "127.0.0.1:4102"},
		{name: "port 80", scheme: "http", authority: "writer.formation.invalid:80", member: "writer", authorityTo: "127.0.0.1:4101"},
		{name: "port 8080", scheme: "http", authority: "writer.formation.invalid:8080", refused: "its port is not 80"},
		{name: "https", scheme: "https", authority: "writer.formation.invalid", refused: "its scheme is not http"},
		{name: "https at 80", scheme: "https", authority: "writer.formation.invalid:80", refused: "its scheme is not http"},
		{name: "user information", scheme: "http", authority: "me@writer.formation.invalid", refused: "it carries user information"},
		{name: "not a callee", scheme: "http", authority: "lead.formation.invalid", refused: "'lead' is not a member this capsule may call"},
		{name: "no such member", scheme: "http", authority: "ghost.formation.invalid", refused: "'ghost' is not a member this capsule may call"},
		{name: "the domain itself", scheme: "http", authority: "formation.invalid", refused: "it names no member"},
		{name: "deeper", scheme: "http", authority: "a.writer.formation.invalid", refused: "it names no member"},
		{name: "elsewhere", scheme: "http", authority: "writer.example.com"},
		{name: "lookalike", scheme: "http", authority: "writerformation.invalid"},
		{name: "loopback", scheme: "http", authority: "127.0.0.1:4101"},
		{name: "ipv6", scheme: "http", authority: "[::1]:80"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Route(context.Background(), tc.scheme, tc.authority)
			var refused *RefusedError
			switch {
			case tc.refused != "":
				if got != nil || !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.refused) ||
					!strings.HasPrefix(err.Error(), tc.scheme+"://"+tc.authority+" is under formation.invalid but ") {
					t.Fatalf("got %+v, %v; want refused: %s", got, err, tc.refused)
				}
			case tc.member != "":
				want := Target{Member: tc.member, Scheme: "http", Authority: tc.authorityTo, Token: c.Token(tc.member)}
				if err != nil || got == nil || *got != want {
					t.Fatalf("got %+v, %v; want %+v", got, err, want)
				}
				h := got.Headers()
				if len(h) != 2 || h[0] != [2]string{"Authorization", "Bearer " + want.Token} || h[1] != [2]string{"x-murmur-task-origin", "peer"} {
					t.Fatalf("headers %q", h)
				}
			default:
				if got != nil || err != nil {
					t.Fatalf("got %+v, %v; want it left alone", got, err)
				}
			}
		})
	}
}

// TestRouteNoMember: a run that is no member (or calls nobody) refuses
// every host under formation.invalid and leaves the rest alone.
func TestRouteNoMember(t *testing.T) {
	var c *Callees
	if _, err := c.Route(context.Background(), "http", "writer.formation.invalid"); err == nil || !strings.Contains(err.Error(), "'writer' is not a member this capsule may call") {
		t.Fatalf("err %v", err)
	}
	if got, err := c.Route(context.Background(), "http", "example.com"); got != nil || err != nil {
		t.Fatalf("%v %v", got, err)
	}
}

// TestRouteNoAddress: a callee whose address never came is not refused
// but fails, once the wait ends (here, the context's).
func TestRouteNoAddress(t *testing.T) {
	c := calleesAt(t, `{"addresses":[{"name":"writer","url":"http://127.0.0.1:4101"}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Route(ctx, "http", "critic.formation.invalid")
	var refused *RefusedError
	if err == nil || errors.As(err, &refused) {
		t.Fatalf("err %v", err)
	}
	if _, err := c.Route(context.Background(), "http", "critic.formation.invalid"); err == nil || !strings.Contains(err.Error(), "member 'critic' had no address") {
		t.Fatalf("err %v", err)
	}
}
