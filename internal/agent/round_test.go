package agent

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/trace"
)

// part is an in-memory Part: items that end when the test says, so the
// round's own rules — the joined status texts, the order of the blocks,
// one task_continued, abandoning — are seen alone.
type part struct {
	mu        sync.Mutex
	changed   chan struct{}
	ids       []string
	ended     map[string]bool
	abandoned bool
}

func newPart(ids ...string) *part {
	return &part{changed: make(chan struct{}), ids: ids, ended: map[string]bool{}}
}

func (p *part) end(id string) {
	p.mu.Lock()
	p.ended[id] = true
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

func (p *part) Claim(string) Claim {
	if len(p.ids) == 0 {
		return nil
	}
	return p
}
func (p *part) InFlight(string) []string { return nil }
func (p *part) TaskEnded(string, string) {}
func (p *part) Release()                 {}
func (p *part) Abandon(bool)             { p.mu.Lock(); p.abandoned = true; p.mu.Unlock() }
func (p *part) Deliver() ([]string, []string) {
	var blocks []string
	for _, id := range p.ids {
		blocks = append(blocks, "block "+id)
	}
	return p.ids, blocks
}
func (p *part) Outstanding() (int, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, id := range p.ids {
		if !p.ended[id] {
			n++
		}
	}
	return n, p.changed
}

type statusLog struct {
	events
	mu     sync.Mutex
	status []string
}

func (s *statusLog) Status(text string) {
	s.mu.Lock()
	s.status = append(s.status, text)
	s.mu.Unlock()
}

func roundRecorder(t *testing.T) (*trace.Recorder, string) {
	path := filepath.Join(t.TempDir(), trace.FileName)
	tw, err := trace.Create(path, "ses_1", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	return trace.NewRecorder(tw, nil, time.Now(), nil), path
}

// TestRoundJoinsDelegationsAndMemberCalls: both kinds wait together, the
// status texts are joined by "; " (delegations first) and the one
// continuation holds the delegation blocks, then the member answer blocks.
func TestRoundJoinsDelegationsAndMemberCalls(t *testing.T) {
	rec, path := roundRecorder(t)
	dels, calls := newPart("dlg_1", "dlg_2"), newPart("mcl_1")
	ev := &statusLog{}
	go func() {
		time.Sleep(50 * time.Millisecond)
		dels.end("dlg_1")
		time.Sleep(50 * time.Millisecond)
		calls.end("mcl_1")
		time.Sleep(50 * time.Millisecond)
		dels.end("dlg_2")
	}()
	text, ok := Round{Delegations: dels, MemberCalls: calls, Recorder: rec}.Await(context.Background(), "tsk_1", 1, ev)
	if !ok || text != "block dlg_1\n\nblock dlg_2\n\nblock mcl_1" {
		t.Fatalf("continuation %v %q", ok, text)
	}
	want := []string{
		"waiting on delegate-task: 2 delegation(s) outstanding; waiting on call-member: 1 call(s) outstanding",
		"waiting on delegate-task: 1 delegation(s) outstanding; waiting on call-member: 1 call(s) outstanding",
		"waiting on delegate-task: 1 delegation(s) outstanding",
		"continuing with 2 delegation outcome(s); continuing with 1 member answer(s)",
	}
	if strings.Join(ev.status, "\n") != strings.Join(want, "\n") {
		t.Fatalf("status messages:\n%s", strings.Join(ev.status, "\n"))
	}
	lines := readLines(t, path)
	if len(lines["task_waiting"]) != 1 || lines["task_waiting"][0]["outstanding"] != 2.0 || lines["task_waiting"][0]["member_calls"] != 1.0 {
		t.Errorf("task_waiting %v", lines["task_waiting"])
	}
	if c := lines["task_continued"]; len(c) != 1 || len(c[0]["delegations"].([]any)) != 2 || len(c[0]["member_calls"].([]any)) != 1 {
		t.Errorf("task_continued %v", c)
	}
}

// TestRoundAbandons: no turn left, or a cancel, abandons every part's round.
func TestRoundAbandons(t *testing.T) {
	rec, _ := roundRecorder(t)
	dels, calls := newPart("dlg_1"), newPart("mcl_1")
	if _, ok := (Round{Delegations: dels, MemberCalls: calls, Recorder: rec}).Await(context.Background(), "tsk_1", 0, &statusLog{}); ok || !dels.abandoned || !calls.abandoned {
		t.Fatalf("no turn left: continued %v, abandoned %v %v", ok, dels.abandoned, calls.abandoned)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = newPart("mcl_2")
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	if _, ok := (Round{MemberCalls: calls, Recorder: rec}).Await(ctx, "tsk_1", 1, &statusLog{}); ok || !calls.abandoned {
		t.Fatalf("cancel: continued %v, abandoned %v", ok, calls.abandoned)
	}
	if (Round{Recorder: rec}).Waiter() != nil {
		t.Fatal("a round with no part is no waiter")
	}
}

func readLines(t *testing.T, path string) map[string][]map[string]any {
	t.Helper()
	f, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]any{}
	for _, l := range f.Lines {
		m := map[string]any{}
		for k, v := range l.Fields {
			var x any
			json.Unmarshal(v, &x)
			m[k] = x
		}
		out[l.EventType] = append(out[l.EventType], m)
	}
	return out
}

var _ door.Events = (*statusLog)(nil)
