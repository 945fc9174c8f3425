package launchapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
