package membercall

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/trace"
)

// realMember is a real member door (internal/door) taking one task at a
// time, authenticated by this formation's tokens: a task's text says what
// its runner does — "hold" waits for release, "none" ends without an
// answer, anything else is answered.
type realMember struct {
	url     string
	release chan struct{}
	mu      sync.Mutex
	callers []string
}

func startRealMember(t *testing.T, frm string, pub ed25519.PublicKey) *realMember {
	t.Helper()
	m := &realMember{release: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.url = "http://" + ln.Addr().String()
	op, _ := doorapi.NewOperatorToken()
	s, err := door.New(door.Config{Name: "local/worker", Version: "0.1.0", SessionID: ids.New(ids.Session), URL: m.url,
		TaskAcceptance: "single", AfterTask: "sleep",
		Auth: &door.Auth{Realm: "local/worker", OperatorToken: op, AcceptPeer: true, FormationID: frm, Member: "worker", VerifyKey: pub},
		Runner: door.RunnerFunc(func(ctx context.Context, task *door.Task, _ door.Events) door.Outcome {
			m.mu.Lock()
			m.callers = append(m.callers, task.Caller)
			m.mu.Unlock()
			switch text := task.Text(); text {
			case "hold":
				select {
				case <-m.release:
					return door.Answer("held, then done")
				case <-ctx.Done():
					return door.Canceled()
				}
			case "none":
				return door.Failed("no answer: the worker had nothing")
			default:
				return door.Answer("did: " + text)
			}
		})})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
		s.Close()
	})
	return m
}

// realFixture is a real member door, worker, and a runtime calling it as
// lead with a formation token for the edge lead → to.
func realFixture(t *testing.T, to string) (*realMember, *fixture) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	frm := ids.New(ids.Formation)
	m := startRealMember(t, frm, pub)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	token := formation.MintToken(priv, frm, "lead", to)
	callees := formation.NewCallees(&formation.Line1{Calls: []formation.Call{{Name: "worker", Token: token}}}, bufio.NewReader(pr), nil)
	go fmt.Fprintf(pw, `{"addresses":[{"name":"worker","url":%q}]}`+"\n", m.url)
	f := newFixture(t, m.url, time.Minute)
	f.rt.cfg.Callees = callees
	return m, f
}

// TestRefusedAtARealDoor: a token the door does not take for this member
// (issued for the edge lead → critic) is its 403, and the call fails at
// once with the door's words.
func TestRefusedAtARealDoor(t *testing.T) {
	_, f := realFixture(t, "critic")
	res, isErr := outcome(t, f.call(t, `{"member":"worker","task":"t"}`))
	if !isErr || res["status"] != "failed" || !strings.Contains(res["output"], "the member's door refused the call: HTTP 403 not_permitted: formation member 'lead' may not call this member") {
		t.Fatalf("result %v", res)
	}
}

// TestCallsAtARealDoor: calls through a real member door with a real
// formation token: a held member answers the second call busy, the
// runtime re-offers until it takes it, and each ending is read back; the
// member sees the caller's name on every task.
func TestCallsAtARealDoor(t *testing.T) {
	m, f := realFixture(t, "worker")
	call := func(task, text string) map[string]string {
		in := fmt.Sprintf(`{"member":"worker","task":%q}`, text)
		res, isErr := outcome(t, (&CallTool{f.rt}).Call(context.Background(), callFor(task, in, f.rec)))
		if isErr {
			t.Fatalf("%s: %v", text, res)
		}
		return res
	}
	if r := call("tsk_a", "hold"); r["status"] != "started" {
		t.Fatalf("hold: %v", r)
	}
	if r := call("tsk_b", "count"); r["status"] != "busy" {
		t.Fatalf("second call while the member holds a task: %v", r)
	}
	time.Sleep(100 * time.Millisecond) // a busy re-offer or two
	close(m.release)
	for task, want := range map[string]string{"tsk_a": "held, then done", "tsk_b": "did: count"} {
		_, blocks := waitTask(t, f, task)
		if !strings.Contains(blocks[0], "ended completed:") || !strings.Contains(blocks[0], "\nanswer:\n"+want+"\n") {
			t.Errorf("%s block:\n%s", task, blocks[0])
		}
	}
	if busy := f.lines(t, trace.TypeMemberCallBusy); len(busy) < 1 || busy[0]["task_id"] != "tsk_b" {
		t.Errorf("member_call_busy %v", busy)
	}
	if r := call("tsk_c", "none"); r["status"] != "started" {
		t.Fatalf("none: %v", r)
	}
	_, blocks := waitTask(t, f, "tsk_c")
	if !strings.Contains(blocks[0], "ended no_answer:") || !strings.Contains(blocks[0], "answer:\nnone (the member ended its task without an answer: the worker had nothing)\n") {
		t.Errorf("no_answer block:\n%s", blocks[0])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.Join(m.callers, ",") != "lead,lead,lead" {
		t.Errorf("the member saw callers %v", m.callers)
	}
}
