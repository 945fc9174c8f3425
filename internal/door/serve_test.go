package door_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/testbin"
)

// serve starts a door with Serve on a loopback listener; tune runs before
// Serve.
func serve(t *testing.T, tune func(*door.Server)) *fixture {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	f := &fixture{runner: newRunner(), rec: newRecorder(), url: url}
	srv, err := door.New(door.Config{Name: "local/hello-agent", Version: "0.1.0", SessionID: ids.New(ids.Session), URL: url,
		TaskAcceptance: "queue", QueueDepth: 4, AfterTask: "sleep", Runner: f.runner, Recorder: f.rec})
	if err != nil {
		t.Fatal(err)
	}
	if tune != nil {
		tune(srv)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	f.srv = srv
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	f.client = c
	return f
}

// curlAs runs curl as uid:gid against the door and returns the status
// code and the body.
func curlAs(t *testing.T, uid, gid uint32, url, body string) (string, string) {
	t.Helper()
	cmd := exec.Command("curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-H", "A2A-Version: 1.0",
		"-H", "Content-Type: application/json", "--data-binary", body, url+"/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as uid %d: %v (%s)", uid, err, out)
	}
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	return s[i+1:], s[:max(i, 0)]
}

// A door serves only its own user: curl run as a throwaway user is answered
// 403 {"error": "not_same_user"} before its request is read (a
// murmur.StopSession from it ends nothing, a message starts no task), while
// the same curl as the door's own user is served.
func TestDoorRefusesOtherUsers(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	uid, gid := testbin.ThrowawayUser(t)
	f := serve(t, nil)
	if door.UID(f.srv) != uint32(os.Geteuid()) {
		t.Fatalf("door serves uid %d, runs as %d", door.UID(f.srv), os.Geteuid())
	}
	stop := `{"jsonrpc":"2.0","id":1,"method":"murmur.StopSession"}`
	for _, body := range []string{stop, sendBody(`{"text":"echo from another user"}`)} {
		code, got := curlAs(t, uid, gid, f.url, body)
		var ref struct{ Error, Message string }
		if code != "403" || json.Unmarshal([]byte(got), &ref) != nil || ref.Error != "not_same_user" ||
			!strings.Contains(ref.Message, fmt.Sprintf("from uid %d", uid)) {
			t.Errorf("as uid %d: %s %s", uid, code, got)
		}
	}
	select {
	case <-f.srv.Done():
		t.Fatal("another user's murmur.StopSession ended the session")
	default:
	}
	if n := f.rec.count(); n != 0 {
		t.Fatalf("another user's message made %d tasks", n)
	}
	// The runtime's own user, with the same client.
	code, got := curlAs(t, uint32(os.Geteuid()), uint32(os.Getegid()), f.url, sendBody(`{"text":"echo mine"}`))
	if code != "200" || !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Fatalf("as the door's own uid: %s %s", code, got)
	}
}

// Idle, header-less and slow-body connections are closed after the door's
// timeouts (shortened here), the cap on connections holds, and a client
// still gets served once a slot frees.
func TestDoorConnectionBounds(t *testing.T) {
	const maxConns = 4
	f := serve(t, func(s *door.Server) {
		door.SetConnLimits(s, 300*time.Millisecond, 600*time.Millisecond, 300*time.Millisecond, maxConns)
	})
	addr := strings.TrimPrefix(f.url, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// closedByDoor reads until the door closes c (what it sent first, if
	// anything, is returned); the deadline only keeps a broken door from
	// hanging the test.
	closedByDoor := func(c net.Conn) (string, bool) {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, err := io.ReadAll(c)
		var ne net.Error
		return string(b), !(errors.As(err, &ne) && ne.Timeout())
	}

	t.Run("silent", func(t *testing.T) {
		if _, ok := closedByDoor(dial()); !ok {
			t.Error("a connection that sent nothing was not closed")
		}
	})
	t.Run("slow headers", func(t *testing.T) {
		c := dial()
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\n")
		if _, ok := closedByDoor(c); !ok {
			t.Error("a connection whose headers never ended was not closed")
		}
	})
	t.Run("slow body", func(t *testing.T) {
		c := dial()
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
		out, ok := closedByDoor(c)
		if !ok {
			t.Error("a connection whose body never ended was not closed")
		}
		if f.rec.count() != 0 {
			t.Errorf("a cut body made a task: %s", out)
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c := dial()
		io.WriteString(c, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("card: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		if _, ok := closedByDoor(c); !ok {
			t.Error("an idle keep-alive connection was not closed")
		}
	})
	t.Run("served behind silent connections", func(t *testing.T) {
		held := make([]net.Conn, maxConns+2)
		for i := range held {
			held[i] = dial()
		}
		c := dial()
		io.WriteString(c, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("a client behind %d silent connections: %v %v", len(held), resp, err)
		}
	})
	if n := door.MaxOpenConns(f.srv); n > maxConns {
		t.Errorf("at most %d connections were served at once, cap %d", n, maxConns)
	}
	// After all that, a legitimate client is served.
	if task := f.send(t, "echo still here", false); task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("after the bounds: %s", task.Status.State)
	}
}

// The cap holds (long timeouts here, so nothing ends by itself). At the cap
// a connection that only waits (no request sent) is closed to make room, so
// a client behind a flood of them is served at once; while every slot has a
// request under way (a body still coming), one more connection is accepted
// by the kernel but not served until a slot frees, then it is.
func TestDoorConnectionCap(t *testing.T) {
	const maxConns = 4
	f := serve(t, func(s *door.Server) { door.SetConnLimits(s, time.Minute, time.Minute, time.Minute, maxConns) })
	addr := strings.TrimPrefix(f.url, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	card := func(c net.Conn) {
		t.Helper()
		io.WriteString(c, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("card: %v %v", resp, err)
		}
	}

	// A flood of silent connections: each new one closes the longest
	// waiting, and the client after them is served.
	for range 3 * maxConns {
		dial()
	}
	card(dial())
	if n := door.ClosedWaiting(f.srv); n < 2*maxConns {
		t.Errorf("%d waiting connections closed at the cap, want at least %d", n, 2*maxConns)
	}
	waitFor(t, func() bool { return door.OpenConns(f.srv) <= maxConns })

	// Every slot with a request under way: the next connection waits.
	// (One at a time: a connection whose request has not been read yet
	// is still only waiting.)
	active := func() int { return int(door.OpenConns(f.srv)) - door.Waiting(f.srv) }
	busy := make([]net.Conn, maxConns)
	for i := range busy {
		busy[i] = dial()
		io.WriteString(busy[i], "POST / HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Length: 100\r\n\r\n{")
		waitFor(t, func() bool { return active() == i+1 })
	}
	waitFor(t, func() bool { return door.OpenConns(f.srv) == maxConns && door.Waiting(f.srv) == 0 })
	closedBefore := door.ClosedWaiting(f.srv)
	extra := dial()
	io.WriteString(extra, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _ := extra.Read(make([]byte, 1)); n != 0 {
		t.Fatal("a connection past the cap was served while every slot had a request under way")
	}
	busy[0].Close()
	extra.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the waiting client: %v %v", resp, err)
	}
	if door.ClosedWaiting(f.srv) != closedBefore {
		t.Error("a connection with a request under way was closed at the cap")
	}
	if n := door.MaxOpenConns(f.srv); n > maxConns {
		t.Errorf("at most %d connections were served at once, cap %d", n, maxConns)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 3000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in 30 s")
}

// countingCompletions counts the completions that reach it.
type countingCompletions struct{ n atomic.Int64 }

func (c *countingCompletions) HandleCompletion(context.Context, *door.Completion) (any, error) {
	c.n.Add(1)
	return map[string]any{"ok": true}, nil
}

// A script parent's completion listener (it has no door) is held to the
// door's same-user rule: another local user's post is refused before it is
// read and reaches no handler; the runtime's own user is answered.
func TestCompletionServerRefusesOtherUsers(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	uid, gid := testbin.ThrowawayUser(t)
	h := &countingCompletions{}
	srv := door.NewCompletionServer(h, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	url := "http://" + ln.Addr().String()
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"outcome"}]}}}`
	code, got := curlAs(t, uid, gid, url, body)
	if code != "403" || !strings.Contains(got, door.RuleSameUser) {
		t.Errorf("as uid %d: %s %s", uid, code, got)
	}
	if n := h.n.Load(); n != 0 {
		t.Fatalf("another user's post reached the handler %d times", n)
	}
	if code, got := curlAs(t, uint32(os.Geteuid()), uint32(os.Getegid()), url, body); code == "403" {
		t.Errorf("as the runtime's own uid: %s %s", code, got)
	}
}
