package hostapi

import (
	"bufio"
	"context"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// TestSendToCallee: a formation member's message/send to a callee's
// virtual address reaches the callee's real door (path and query kept)
// with the edge's token and origin peer, though network.allow grants
// nothing; the a2a_send line names the virtual URL. Every other address
// under formation.invalid is refused (E-RUN-070) and nothing reaches the
// peer, also for a run that is no member, whatever network.allow says.
func TestSendToCallee(t *testing.T) {
	p := startPeer(t, "task")
	l1 := &formation.Line1{Member: "lead", Calls: []formation.Call{{Name: "worker", Token: "mft1.edge"}}}
	line2 := `{"addresses":[{"name":"worker","url":"` + p.srv.URL + `"}]}` + "\n"
	callees := formation.NewCallees(l1, bufio.NewReader(strings.NewReader(line2)), nil)

	e := newEnv(t, msgManifest(), nil)
	e.sess.Callees = callees
	virtual := "http://Worker.formation.invalid:80/a2a?v=1"
	tr, err := e.api.Send(context.Background(), virtual, wit.Message{MessageID: "m-1", Text: "review this"})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	if len(p.received) != 1 || p.received[0].Parts[0].Text() != "review this" || p.paths[0] != "/a2a?v=1" ||
		p.headers[0].Get("Authorization") != "Bearer mft1.edge" || p.headers[0].Get("x-murmur-task-origin") != "peer" {
		t.Fatalf("the callee got %d messages, path %q, headers %v", len(p.received), p.paths, p.headers)
	}
	p.mu.Unlock()
	ls := e.lines(t, trace.TypeA2ASend)
	if len(ls) != 1 || ls[0].Str("peer_url") != virtual || ls[0].Str("task_id") != tr.TaskID {
		t.Fatalf("a2a_send lines %v", ls)
	}
	for k, v := range ls[0].Fields {
		if strings.Contains(string(v), strings.TrimPrefix(p.srv.URL, "http://")) || strings.Contains(string(v), "mft1.") {
			t.Fatalf("the a2a_send line's %s names the real address or the token: %s", k, v)
		}
	}

	// A send to any other address (no token) is answered by the peer
	// without one: the token goes to the callee's virtual address only.
	e.api.grants.Capsule.NetworkAllow = []string{"127.0.0.1"}
	if _, err := e.api.Send(context.Background(), p.srv.URL, wit.Message{Text: "direct"}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	if h := p.headers[1]; h.Get("Authorization") != "" || h.Get("x-murmur-task-origin") != "" {
		t.Fatalf("a direct send carried %v", h)
	}
	p.mu.Unlock()

	other := newEnv(t, msgManifest("worker.formation.invalid"), nil) // no member: nothing under the domain is reached
	for _, c := range []struct {
		env  *env
		url  string
		part string
	}{
		{e, "http://worker.formation.invalid:8080/", "its port is not 80"},
		{e, "https://worker.formation.invalid/", "its scheme is not http"},
		{e, "http://critic.formation.invalid/", "'critic' is not a member this capsule may call"},
		{e, "http://formation.invalid/", "it names no member"},
		{other, "http://worker.formation.invalid/", "'worker' is not a member this capsule may call"},
	} {
		_, err := c.env.api.Send(context.Background(), c.url, wit.Message{Text: "x"})
		wantErr(t, err, c.part)
		if diag.Code(err) != "E-RUN-070" {
			t.Fatalf("%s: code %s", c.url, diag.Code(err))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.headers) != 2 {
		t.Fatalf("refused sends reached the peer: %d requests", len(p.headers))
	}
}
