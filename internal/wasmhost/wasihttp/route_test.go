package wasihttp

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestGrantRoute: Route is asked first; its Virtual rewrites where the
// request goes and replaces the guest's headers of the same names (in any
// case), keeping the path, query and other headers, and Decide is not
// asked; its error refuses; nil leaves the request to Decide.
func TestGrantRoute(t *testing.T) {
	guest := Request{Method: "POST", Scheme: "http", Authority: "worker.formation.invalid", PathWithQuery: "/a?b=c",
		Headers: [][2]string{{"authorization", "Bearer forged"}, {"Content-Type", "application/json"}, {"X-Murmur-Task-Origin", "completion"}, {"AUTHORIZATION", "again"}}}
	v := &Virtual{Scheme: "http", Authority: "127.0.0.1:4101", Headers: [][2]string{{"Authorization", "Bearer tok"}, {"x-murmur-task-origin", "peer"}}}
	refused := errors.New("refused")
	cases := []struct {
		name  string
		route func(context.Context, *Request) (*Virtual, error)
		want  Request
		err   error
		asked bool // Decide asked
	}{
		{name: "routed", route: func(context.Context, *Request) (*Virtual, error) { return v, nil },
			want: Request{Method: "POST", Scheme: "http", Authority: "127.0.0.1:4101", PathWithQuery: "/a?b=c",
				Headers: [][2]string{{"Content-Type", "application/json"}, {"Authorization", "Bearer tok"}, {"x-murmur-task-origin", "peer"}}}},
		{name: "refused", route: func(context.Context, *Request) (*Virtual, error) { return nil, refused }, want: guest, err: refused},
		{name: "not routed", route: func(context.Context, *Request) (*Virtual, error) { return nil, nil }, want: guest, asked: true},
		{name: "no route", want: guest, asked: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			asked := false
			g := Grant{Route: c.route, Decide: func(context.Context, *Request) error { asked = true; return nil }}
			req := guest
			req.Headers = slices.Clone(guest.Headers)
			err := g.decide(context.Background(), &req)
			if !errors.Is(err, c.err) || asked != c.asked {
				t.Fatalf("err %v, Decide asked %v", err, asked)
			}
			if req.Scheme != c.want.Scheme || req.Authority != c.want.Authority || req.PathWithQuery != c.want.PathWithQuery || !slices.Equal(req.Headers, c.want.Headers) {
				t.Fatalf("request %+v, want %+v", req, c.want)
			}
		})
	}
}
