package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/wit"
)

// ScriptTaskID is the task every delegation of a script parent belongs to:
// a script has no tasks, its run is the one delegating task.
const ScriptTaskID = "run"

// OutcomeSuffix ends the file a script parent's outcome block is written
// to, in the runtime dir's delegations/ (a script parent's outcomes,
// docs/delegation.md).
const OutcomeSuffix = ".outcome.txt"

// NewScript makes the runtime of a script parent. A script has no door, so
// it opens a loopback listener that answers the completion path only — not
// recorded, not a door, gone when the runtime is closed — and names it as
// MURMUR_SPAWNER.url. Each outcome block is written, when it arrives, to
// delegations/<delegation_id>.outcome.txt in the runtime dir; nothing waits
// for it in the runtime.
func NewScript(cfg Config) (*Runtime, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the completion listener cannot listen on 127.0.0.1: %w", err)
	}
	cfg.DoorURL = "http://" + ln.Addr().String()
	r := New(cfg)
	r.scriptContext = ids.New(ids.Context)
	srv := door.NewCompletionServer(r, cfg.Log)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	r.stopListener = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
	}
	return r, nil
}

// Call is delegate-task called through the session's tool inventory. A
// model's call gets the result object as text, and a refusal or bad input
// as an error given verbatim (the daemon's sentence). A script's call
// (through murmur:tool-registry/invoke, the input's data is the call's JSON
// object) returns at start, as for an agent: the result object as data,
// passed when the child started and failed when its launch failed; a
// refusal or bad input is the error, its text the plain sentence.
func (t *Tool) Call(ctx context.Context, c *tools.Call) tools.Outcome {
	data := ""
	if c.Input.Data != nil {
		data = *c.Input.Data
	}
	call := Call{TaskID: ScriptTaskID, ContextID: t.r.scriptContext, Input: []byte(data)}
	if tc := c.Task; tc != nil {
		call = Call{TaskID: tc.TaskID, ContextID: tc.ContextID, TraceParent: tc.TraceParent, Input: []byte(data), ParentID: tc.ParentID}
	}
	text, isErr := t.Run(ctx, call)
	if c.Task != nil && c.Task.InFlight != nil {
		c.Task.InFlight(t.InFlight(c.Task.TaskID))
	}
	if isErr {
		return tools.Outcome{Err: errors.New(text), Verbatim: true}
	}
	st := wit.StatusFailed
	var res Result
	if json.Unmarshal([]byte(text), &res) == nil && res.Status == "started" {
		st = wit.StatusPassed
	}
	return tools.Outcome{Result: wit.ToolResult{Status: st, Data: &text}, Text: text}
}

// EndScript ends the delegations still running when the script's run
// returns (ending is its session_end exit_status), with the reason the
// spec gives a task that ends first.
func (r *Runtime) EndScript(ending string) { r.TaskEnded(ScriptTaskID, ending) }

// writeOutcome writes a script parent's outcome block as it arrives,
// atomically: a script polling for the file never reads half of it.
func (r *Runtime) writeOutcome(d *delegation) {
	dir := filepath.Join(r.cfg.RuntimeDir, "delegations")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.cfg.Log.Warn("the outcome block could not be written", "delegation_id", d.id, "error", err)
		return
	}
	if err := store.WriteFileAtomic(filepath.Join(dir, d.id+OutcomeSuffix), []byte(r.block(d)+"\n"), 0o600); err != nil {
		r.cfg.Log.Warn("the outcome block could not be written", "delegation_id", d.id, "error", err)
	}
}
