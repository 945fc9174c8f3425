package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// noop is a tool that answers its input at once (what a step costs beyond
// the tool is the scheduler's).
type noop struct {
	name    string
	calls   atomic.Int64
	fail    bool
	running atomic.Int64
	peak    atomic.Int64
	sleep   time.Duration
}

func (n *noop) Name() string            { return n.name }
func (n *noop) Kind() string            { return tools.KindWASM }
func (n *noop) Description() string     { return "" }
func (n *noop) Schema() json.RawMessage { return tools.DefaultSchema }
func (n *noop) Call(ctx context.Context, c *tools.Call) tools.Outcome {
	n.calls.Add(1)
	r := n.running.Add(1)
	defer n.running.Add(-1)
	for p := n.peak.Load(); r > p && !n.peak.CompareAndSwap(p, r); p = n.peak.Load() {
	}
	if n.sleep > 0 {
		select {
		case <-time.After(n.sleep):
		case <-ctx.Done():
			return tools.Outcome{Err: ctx.Err()}
		}
	}
	if n.fail {
		return tools.Outcome{Err: fmt.Errorf("no")}
	}
	return tools.Outcome{Text: *c.Input.Data}
}

type fixture struct {
	inv  *tools.Inventory
	rec  *trace.Recorder
	task *tools.TaskCall
	cat  *Catalog
}

func newFixture(tb testing.TB, entries ...tools.Entry) *fixture {
	inv := tools.NewInventory("local/bench")
	names := map[string]tools.Entry{}
	for _, e := range entries {
		inv.Add(e)
		names[e.Name()] = e
	}
	tw, err := trace.Create(filepath.Join(tb.TempDir(), trace.FileName), "ses_plan", trace.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tw.Close() })
	rec := trace.NewRecorder(tw, nil, time.Now(), nil)
	rec.Emit(trace.SessionStart{})
	task := &tools.TaskCall{TaskID: "task_1", Turn: 1, ID: "call_1", Lines: rec}
	return &fixture{inv: inv, rec: rec, task: task, cat: NewCatalog(inv, names, nil, nil)}
}

func (f *fixture) run(ctx context.Context, tb testing.TB, plan string) []StepReport {
	p, errs := Parse([]byte(plan), f.cat)
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	steps, _, _, _ := Run(ctx, p, Env{Inv: f.inv, Task: f.task, Lines: f.rec}, "")
	return steps
}

// At most 4 of a plan's steps run at once; all ten run.
func TestRunBound(t *testing.T) {
	n := &noop{name: "t", sleep: 20 * time.Millisecond}
	f := newFixture(t, n)
	var steps []string
	for i := 0; i < 10; i++ {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"t"}`, i))
	}
	got := f.run(context.Background(), t, `{"id":"p","steps":[`+strings.Join(steps, ",")+`]}`)
	if n.calls.Load() != 10 || n.peak.Load() != MaxRunning {
		t.Errorf("calls %d, peak %d", n.calls.Load(), n.peak.Load())
	}
	for _, s := range got {
		if s.Status != StatusSuccess {
			t.Errorf("%+v", s)
		}
	}
}

// A cancelled task: the running step settles failed with the cancel's
// sentence, those never started skipped, and Run returns promptly.
func TestRunCanceled(t *testing.T) {
	n := &noop{name: "t", sleep: time.Minute}
	f := newFixture(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	got := f.run(ctx, t, `{"id":"p","steps":[{"id":"a","tool":"t","retries":3},{"id":"b","tool":"t","depends_on":["a"]}]}`)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	if got[0].Status != StatusFailed || *got[0].Error != "the task was cancelled" || got[0].Attempts != 1 ||
		got[1].Status != StatusSkipped || *got[1].Error != "not run: the task was cancelled" {
		t.Errorf("%+v %q %+v %q", got[0], *got[0].Error, got[1], *got[1].Error)
	}
}

// A reference to an output that does not exist fails the step, unretried.
func TestRunMissingOutput(t *testing.T) {
	bad := &noop{name: "bad", fail: true}
	ok := &noop{name: "ok"}
	f := newFixture(t, bad, ok)
	got := f.run(context.Background(), t, `{"id":"p","steps":[{"id":"a","tool":"ok","if":"'x' == 'y'"},{"id":"b","tool":"ok","input":{"m":"$a.output"},"depends_on":["a"],"retries":2,"on_error":"continue"}]}`)
	if got[1].Status != StatusFailed || got[1].Attempts != 0 || *got[1].Error != "step b: $a.output has no value: step a ended skipped without output" {
		t.Errorf("%+v", got[1])
	}
}

// A 100-step chain, each step referring to the one before: validation time.
func BenchmarkValidateChain100(b *testing.B) {
	f := newFixture(b, &noop{name: "t"})
	steps := []string{`{"id":"s0","tool":"t"}`}
	for i := 1; i < 100; i++ {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"t","input":{"m":"$s%d.output"},"depends_on":["s%d"],"if":"$s%d.status == 'success'"}`, i, i-1, i-1, i-1))
	}
	raw := []byte(`{"id":"chain","steps":[` + strings.Join(steps, ",") + `]}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, errs := Parse(raw, f.cat); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// Ten independent no-op tool steps in one plan, against the same ten calls
// made one after another through the inventory (as a model's calls are):
// the difference per step is the plan's own overhead.
func BenchmarkTenSteps(b *testing.B) {
	var steps []string
	for i := 0; i < 10; i++ {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"t","input":{"n":%d}}`, i, i))
	}
	raw := []byte(`{"id":"ten","steps":[` + strings.Join(steps, ",") + `]}`)
	b.Run("plan", func(b *testing.B) {
		f := newFixture(b, &noop{name: "t"})
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			p, _ := Parse(raw, f.cat)
			Run(context.Background(), p, Env{Inv: f.inv, Task: f.task, Lines: f.rec}, "")
		}
	})
	b.Run("sequential", func(b *testing.B) {
		f := newFixture(b, &noop{name: "t"})
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for j := 0; j < 10; j++ {
				in := fmt.Sprintf(`{"n":%d}`, j)
				tc := *f.task
				tc.ID = fmt.Sprintf("call_%d", j)
				f.inv.Call(context.Background(), tools.Call{Name: "t", Input: wit.ToolInput{Data: &in}, Task: &tc})
			}
		}
	})
}
