package launch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/membercall"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/tools"
)

// declared is a declared tool whose name is one of the runtime's.
type declared struct{ name string }

func (d declared) Name() string                                    { return d.name }
func (d declared) Kind() string                                    { return tools.KindShell }
func (d declared) Description() string                             { return "" }
func (d declared) Schema() json.RawMessage                         { return tools.DefaultSchema }
func (d declared) Call(context.Context, *tools.Call) tools.Outcome { return tools.Outcome{} }

// TestMemberTools: a member with a callee gets call-member and
// end-without-answer; one with none gets neither; a declared tool of
// either name is E-MAN-026.
func TestMemberTools(t *testing.T) {
	callees := formation.NewCallees(&formation.Line1{Calls: []formation.Call{{Name: "worker", Token: "t"}}}, nil, nil)
	for _, tc := range []struct {
		name     string
		callees  *formation.Callees
		existing string
		want     string // the inventory's names, or the error's code
	}{
		{"a callee", callees, "", "call-member,end-without-answer"},
		{"no callee", formation.NewCallees(&formation.Line1{}, nil, nil), "", ""},
		{"not a member", nil, "", ""},
		{"clash", callees, membercall.EndToolName, "E-MAN-026"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{callees: tc.callees, Manifest: &manifest.Manifest{}, lookup: func(string) (string, bool) { return "", false }}
			k := &agentRun{inv: tools.NewInventory("local/lead")}
			if tc.existing != "" {
				k.inv.Add(declared{tc.existing})
			}
			err := k.addMemberTools(&run{p: p, sess: &session.Session{RuntimeDir: t.TempDir()}})
			defer k.calls.Close()
			if strings.HasPrefix(tc.want, "E-") {
				if d, ok := err.(*diag.Diagnostic); !ok || d.Code != tc.want {
					t.Fatalf("err %v, want %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range k.inv.Entries() {
				names = append(names, e.Name())
			}
			if got := strings.Join(names, ","); got != tc.want || strings.Join(memberToolNames(p), ",") != tc.want {
				t.Fatalf("tools %q, tools_declared %v, want %q", got, memberToolNames(p), tc.want)
			}
			if tc.want != "" && (k.endings() == nil || k.waiter(&spawnWiring{}, nil) == nil) {
				t.Fatal("a member with callees waits on its calls and can end without an answer")
			}
			if tc.want == "" && (k.endings() != nil || k.waiter(&spawnWiring{}, nil) != nil) {
				t.Fatal("a member without callees has no member-call round")
			}
		})
	}
}
