package launchapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// What the parent writes is what the child reads, approval included.
func TestLaunchedRoundTrip(t *testing.T) {
	in := Launched{Approval: roostapi.ApprovalOf("msa1.x"), ParentTier: "scoped", Task: "do it"}
	line := in.Line()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", line)
	}
	out, err := ReadLaunched(bytes.NewReader(line))
	if err != nil || out.Approval.Reveal() != "msa1.x" || out.ParentTier != "scoped" || out.Task != "do it" || out.Snapshot != nil {
		t.Fatalf("read back %+v, %v", out, err)
	}
}

// The ready line mur run prints is the one a parent parses.
func TestReadyRoundTrip(t *testing.T) {
	url := "127.0.0.1:41234"
	in := Ready{URL: &url, PID: 7, SessionID: "ses_1", Name: "local/a", Version: "1.0.0", Workdir: "/w", RecordsDir: "/r"}
	b, _ := json.Marshal(in)
	if strings.Contains(string(b), "formation_id") {
		t.Errorf("formation_id written for no formation: %s", b)
	}
	out, err := ParseReady(string(b) + "\n")
	if err != nil || *out.URL != url || out.SessionID != "ses_1" || out.RecordsDir != "/r" {
		t.Fatalf("parsed %+v, %v", out, err)
	}
}

func TestSpawnerEnvValue(t *testing.T) {
	sp := Spawner{URL: "http://127.0.0.1:1", SessionID: "ses_1", ContextID: "ctx_1", DelegationID: "dlg_1"}
	got, err := ReadSpawner(func(k string) (string, bool) { return sp.EnvValue(), k == EnvSpawner })
	if err != nil || *got != sp {
		t.Fatalf("read back %+v, %v", got, err)
	}
}

// The approval line's door_token: carried both ways when it is an operator
// token, absent when none was sent, and any other form refused with
// E-RUN-020 without quoting it.
func TestLaunchedDoorToken(t *testing.T) {
	tok, err := doorapi.NewOperatorToken()
	if err != nil {
		t.Fatal(err)
	}
	line := Launched{Approval: roostapi.ApprovalOf("msa1.x"), ParentTier: "sealed", DoorToken: tok}.Line()
	if !bytes.Contains(line, []byte(`"door_token":"`+tok+`"`)) {
		t.Fatalf("line %s", line)
	}
	if out, err := ReadLaunched(bytes.NewReader(line)); err != nil || out.DoorToken != tok {
		t.Fatalf("read back %q, %v", out.DoorToken, err)
	}
	none := Launched{Approval: roostapi.ApprovalOf("msa1.x"), ParentTier: "sealed"}.Line()
	if bytes.Contains(none, []byte("door_token")) {
		t.Errorf("a line with no token names door_token: %s", none)
	}
	if out, err := ReadLaunched(bytes.NewReader(none)); err != nil || out.DoorToken != "" {
		t.Fatalf("no token: %q, %v", out.DoorToken, err)
	}
	body := strings.TrimPrefix(tok, doorapi.OperatorTokenPrefix)
	for _, c := range []struct{ name, tok string }{
		{"another prefix", "mdt2." + body},
		{"no prefix", body},
		{"short", tok[:len(tok)-1]},
		{"long", tok + "A"},
		{"padded", tok + "="},
		{"standard base64", doorapi.OperatorTokenPrefix + "+" + body[1:]},
		{"not canonical", doorapi.OperatorTokenPrefix + body[:42] + "B"},
		{"a formation token", "mft1.abc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := json.Marshal(map[string]string{"approval": "msa1.x", "parent_tier": "sealed", "door_token": c.tok})
			_, err := ReadLaunched(bytes.NewReader(append(b, '\n')))
			if err == nil || !strings.Contains(err.Error(), "E-RUN-020") ||
				!strings.Contains(err.Error(), "--spawn-approval-stdin: the line's door_token is not an operator token (mdt1. and the base64url, no padding, of 32 bytes)") {
				t.Fatalf("%q: %v", c.tok, err)
			}
			if strings.Contains(err.Error(), c.tok) {
				t.Errorf("the refusal quotes the token: %v", err)
			}
		})
	}
}
