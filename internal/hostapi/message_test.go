package hostapi

import (
	"context"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// peer is a real A2A 1.0 server (a2a-go's JSON-RPC handler) on 127.0.0.1
// whose executor opens a task, reports it working and, unless told to
// answer with a message, completes it.
type peer struct {
	srv *httptest.Server

	mu       sync.Mutex
	received []*a2a.Message
	taskIDs  []a2a.TaskID
	headers  []http.Header
	paths    []string // each request's path and query
	reply    string   // "task" or "message"
	block    chan struct{}
}

func (p *peer) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	p.mu.Lock()
	p.received = append(p.received, ec.Message)
	p.taskIDs = append(p.taskIDs, ec.TaskID)
	reply, block := p.reply, p.block
	p.mu.Unlock()
	return func(yield func(a2a.Event, error) bool) {
		if block != nil {
			select {
			case <-block:
			case <-ctx.Done():
				return
			}
		}
		if reply == "message" {
			yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("done")), nil)
			return
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (p *peer) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func startPeer(t *testing.T, reply string) *peer {
	t.Helper()
	p := &peer{reply: reply}
	h := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(p))
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.headers = append(p.headers, r.Header.Clone())
		p.paths = append(p.paths, r.URL.RequestURI())
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *peer) hostPort() string { return strings.TrimPrefix(p.srv.URL, "http://") }

func msgManifest(allow ...string) string {
	var b strings.Builder
	b.WriteString("name: local/sender\nversion: \"0.1.0\"\ncapabilities:\n  network:\n    allow:\n")
	for _, a := range allow {
		fmt.Fprintf(&b, "      - %q\n", a)
	}
	return b.String()
}

func TestSendAllowed(t *testing.T) {
	p := startPeer(t, "task")
	_, port, _ := net.SplitHostPort(p.hostPort())
	// Each grant form that covers http://127.0.0.1:PORT (network.allow, docs/manifest.md).
	for _, grant := range []string{"127.0.0.1", "127.0.0.1:" + port, "http://127.0.0.1:" + port} {
		t.Run(grant, func(t *testing.T) {
			e := newEnv(t, msgManifest(grant), nil)
			ctxID := "ctx-given"
			tr, err := e.api.Send(context.Background(), p.srv.URL, wit.Message{MessageID: "msg-1", ContextID: &ctxID, Text: "do the thing"})
			if err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			got := p.received[len(p.received)-1]
			taskID := p.taskIDs[len(p.taskIDs)-1]
			hdr := p.headers[len(p.headers)-1]
			p.mu.Unlock()
			if got.ID != "msg-1" || got.ContextID != "ctx-given" || len(got.Parts) != 1 || got.Parts[0].Text() != "do the thing" {
				t.Fatalf("peer received %+v", got)
			}
			if hdr.Get("A2A-Version") != "1.0" {
				t.Errorf("A2A-Version header %q", hdr.Get("A2A-Version"))
			}
			if tr.TaskID != string(taskID) || tr.TaskID == "" || tr.ContextID != "ctx-given" || !strings.HasPrefix(tr.State, "TASK_STATE_") {
				t.Fatalf("answer %+v (peer task %s)", tr, taskID)
			}
			ls := e.lines(t, trace.TypeA2ASend)
			if len(ls) != 1 {
				t.Fatalf("want 1 a2a_send line, got %d", len(ls))
			}
			l := ls[0]
			if l.Str("peer_url") != p.srv.URL || l.Str("message_id") != "msg-1" || l.Str("task_id") != tr.TaskID ||
				l.Str("context_id") != "ctx-given" || l.Str("state") != tr.State || l.ParentID != e.tw.StartID() {
				t.Fatalf("a2a_send line %v", l.Fields)
			}
		})
	}
}

// TestSendCapsuleURLForm: a capsule URL as mur records it (no scheme) is
// http, and a message without id or context gets the id the host mints.
func TestSendCapsuleURLFormAndMessageAnswer(t *testing.T) {
	p := startPeer(t, "message")
	e := newEnv(t, msgManifest("127.0.0.1"), nil)
	tr, err := e.api.Send(context.Background(), p.hostPort(), wit.Message{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("message answer %+v", tr)
	}
	p.mu.Lock()
	sentID := p.received[0].ID
	p.mu.Unlock()
	l := e.lines(t, trace.TypeA2ASend)
	if len(l) != 1 || sentID == "" || l[0].Str("message_id") != sentID || l[0].Str("peer_url") != p.hostPort() {
		t.Fatalf("lines %v, sent id %q", l, sentID)
	}
}

func TestSendRefused(t *testing.T) {
	p := startPeer(t, "task")
	_, port, _ := net.SplitHostPort(p.hostPort())
	cases := []struct {
		grant, url string
		parts      []string
	}{
		{"", p.srv.URL, []string{p.srv.URL, "capabilities.network.allow does not cover http://127.0.0.1:" + port}},
		{"127.0.0.1:1", p.srv.URL, []string{"does not cover"}},               // other port
		{"https://127.0.0.1:" + port, p.srv.URL, []string{"does not cover"}}, // other scheme
		{"localhost", p.srv.URL, []string{"does not cover"}},                 // names are not resolved
		{"127.0.0.1", "ftp://127.0.0.1:" + port, []string{"not http or https"}},
		{"127.0.0.1", "http://user:pw@127.0.0.1:" + port, []string{"user information"}},
		{"127.0.0.1", "", []string{"empty"}},
		{"127.0.0.1", "http://", []string{"no host"}},
	}
	for _, c := range cases {
		grants := []string{}
		if c.grant != "" {
			grants = append(grants, c.grant)
		}
		e := newEnv(t, msgManifest(grants...), nil)
		_, err := e.api.Send(context.Background(), c.url, wit.Message{Text: "x"})
		wantErr(t, err, c.parts...)
		if diag.Code(err) != "E-RUN-070" {
			t.Fatalf("%s → %s: code %s", c.grant, c.url, diag.Code(err))
		}
		if n := len(e.lines(t, trace.TypeA2ASend)); n != 0 {
			t.Fatalf("a refused send left %d a2a_send lines", n)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.received) != 0 {
		t.Fatalf("the peer received %d refused messages", len(p.received))
	}
}

func TestSendPeerDownAndDeadline(t *testing.T) {
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	e := newEnv(t, msgManifest("127.0.0.1"), nil)
	_, err = e.api.Send(context.Background(), down, wit.Message{Text: "x"})
	wantErr(t, err, "E-RUN-071", down)

	// A peer that never answers: the call's context bounds the send.
	p := startPeer(t, "task")
	block := make(chan struct{})
	p.mu.Lock()
	p.block = block
	p.mu.Unlock()
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = e.api.Send(ctx, p.srv.URL, wit.Message{Text: "x"})
	wantErr(t, err, "E-RUN-071")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("send outlived its context by far: %s", d)
	}
	if n := len(e.lines(t, trace.TypeA2ASend)); n != 0 {
		t.Fatalf("failed sends left %d a2a_send lines", n)
	}
}

// TestSendNoRedirect: a peer that redirects elsewhere is not followed (the
// grant covered the first host only).
func TestSendNoRedirect(t *testing.T) {
	target := startPeer(t, "task")
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL, http.StatusTemporaryRedirect)
	}))
	defer redir.Close()
	e := newEnv(t, msgManifest(redir.URL), nil)
	_, err := e.api.Send(context.Background(), redir.URL, wit.Message{Text: "x"})
	wantErr(t, err, "E-RUN-071")
	target.mu.Lock()
	defer target.mu.Unlock()
	if len(target.received) != 0 {
		t.Fatal("the redirect was followed")
	}
}

func TestPeerEndpoint(t *testing.T) {
	for _, c := range []struct{ in, endpoint, entry string }{
		{"127.0.0.1:4000", "http://127.0.0.1:4000/", "http://127.0.0.1:4000"},
		{" https://Peer.example:8443/a2a ", "https://Peer.example:8443/a2a", "https://Peer.example:8443"},
		{"http://[::1]:9000", "http://[::1]:9000/", "http://[::1]:9000"},
	} {
		ep, en, err := PeerEndpoint(c.in)
		if err != nil || ep != c.endpoint || en != c.entry {
			t.Errorf("PeerEndpoint(%q) = %q, %q, %v", c.in, ep, en, err)
		}
	}
}
