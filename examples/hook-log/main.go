//go:build wasip1

// Command hook-log is the example lifecycle hook: a component of the hook world
// written in Go with the guest kit. At every event it is bound to it appends one JSON
// line to its output, an artifact update on the session's stream: the event's name,
// its sequence number in the session and the event record.
package main

import (
	"encoding/json"

	"github.com/murmur-go/murmur/guest"
)

// seq counts events: the runtime keeps one instance per hook per session, so it
// runs on from one event to the next.
var seq int

// line is one JSON line of the output.
func line(event string, record any) (guest.HookOutput, error) {
	seq++
	b, err := json.Marshal(struct {
		Event  string `json:"event"`
		Seq    int    `json:"seq"`
		Record any    `json:"record"`
	}{event, seq, record})
	if err != nil {
		return guest.None(), err
	}
	return guest.Artifact(string(b) + "\n"), nil
}

func on[E any](event string) func(E) (guest.HookOutput, error) {
	return func(e E) (guest.HookOutput, error) { return line(event, e) }
}

// A reactor component never runs main: register the hook from init.
func init() {
	guest.Hook(guest.Hooks{
		OnStage:        on[guest.StageEvent]("on-stage"),
		OnSessionStart: on[guest.SessionContext]("on-session-start"),
		OnTaskStart:    on[guest.TaskStartEvent]("on-task-start"),
		OnInference:    on[guest.InferenceEvent]("on-inference"),
		OnToolCall:     on[guest.ToolEvent]("on-tool-call"),
		OnShell:        on[guest.ShellEvent]("on-shell"),
		OnCompaction:   on[guest.CompactionEvent]("on-compaction"),
		OnTaskEnd:      on[guest.TaskEndEvent]("on-task-end"),
		OnSessionEnd:   on[guest.SessionEndEvent]("on-session-end"),
	})
}

func main() {}
