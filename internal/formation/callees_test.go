package formation

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestCalleesAddress(t *testing.T) {
	l1 := &Line1{Calls: []Call{{Name: "writer", Token: "tw"}, {Name: "critic", Token: "tc"}}}
	cases := []struct {
		name, line2, ask string
		close            bool
		want, err        string
	}{
		{name: "found", line2: `{"addresses":[{"name":"writer","url":"http://127.0.0.1:1"},{"name":"critic","url":"http://127.0.0.1:2"}]}`, ask: "critic", want: "http://127.0.0.1:2"},
		{name: "not a callee", line2: `{"addresses":[]}`, ask: "boss", err: "'boss' is not a member this capsule may call"},
		{name: "absent from line 2", line2: `{"addresses":[{"name":"writer","url":"http://127.0.0.1:1"}]}`, ask: "critic", err: "member 'critic' had no address within"},
		{name: "line 2 does not parse", line2: `{"addresses":7}`, ask: "writer", err: "had no address"},
		{name: "channel ends", close: true, ask: "writer", err: "had no address"},
		{name: "line 2 never comes", ask: "writer", err: "had no address within 50ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			c := NewCallees(l1, bufio.NewReader(pr), nil)
			if got := strings.Join(c.Names(), ","); got != "writer,critic" {
				t.Fatalf("names %s", got)
			}
			if c.Token("critic") != "tc" || c.Has("boss") {
				t.Fatal("tokens")
			}
			switch {
			case tc.line2 != "":
				go pw.Write([]byte(tc.line2 + "\n"))
			case tc.close:
				pw.Close()
			}
			got, err := c.Address(context.Background(), tc.ask, 50*time.Millisecond)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v", got, err)
			}
		})
	}
}

func TestCalleesNoneAndNil(t *testing.T) {
	var nilC *Callees
	if nilC.Has("x") || nilC.Names() != nil || nilC.Token("x") != "" {
		t.Fatal("a nil book holds nobody")
	}
	c := NewCallees(&Line1{}, nil, nil)
	if _, err := c.Address(context.Background(), "x", time.Second); err == nil {
		t.Fatal("no callees: no address")
	}
}
