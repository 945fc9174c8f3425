package wasm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/session"
)

// TestEnvironmentOfAMember: a stored driver bound to a formation member's
// session (made before it, as launch makes it) is handed the member's
// MURMUR_FORMATION_PEERS like every other component of the member.
func TestEnvironmentOfAMember(t *testing.T) {
	callees := formation.NewCallees(&formation.Line1{Member: "lead", Calls: []formation.Call{{Name: "worker", Token: "mft1.x"}}}, nil, nil)
	d := newDriver(t, "env", nil)
	d.Bind(&session.Session{ID: "ses_0123", Name: "local/lead", Version: "0.1.0", Callees: callees}, nil)
	var b strings.Builder
	if _, err := d.Call(context.Background(), userRequest("hi"), func(s string) { b.WriteString(s) }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+b.String(), "\nMURMUR_FORMATION_PEERS=worker=http://worker.formation.invalid\n") || strings.Contains(b.String(), "mft1.") {
		t.Fatalf("the component's environment:\n%s", b.String())
	}
}
