package wit

import (
	"fmt"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// The records of the murmur interfaces (wit/ in the repository) as Go structs, with their conversion to and
// from the engine's values. Encoding cannot fail (Value); decoding checks the
// shape and reports a mismatch as an error, never a panic (wasmtime's type
// check already guarantees the shapes, but a bug should not crash a run).

// Status is murmur:tool/run's status enum.
type Status string

// Status values.
const (
	StatusPassed Status = "passed"
	StatusFailed Status = "failed"
	StatusError  Status = "error"
)

// ToolInput is murmur:tool/run's tool-input.
type ToolInput struct {
	Data    *string
	LogPath *string
}

// ToolResult is murmur:tool/run's tool-result.
type ToolResult struct {
	Status    Status
	Summary   *string
	Data      *string
	DataPath  *string
	Truncated bool
	Metadata  [][2]string
}

// RuntimeType is murmur:artifact-manager's runtime-type enum ("wasm", "native").
type RuntimeType string

// ArtifactSummary is murmur:artifact-manager's artifact-summary.
type ArtifactSummary struct {
	Name, Version string
	Runtime       RuntimeType
}

// ArtifactInfo is murmur:artifact-manager's artifact-info.
type ArtifactInfo struct {
	Name, Version, Description string
	Tags                       []string
	Runtime                    RuntimeType
	InputSchema, OutputSchema  *string
}

// RuntimeState is murmur:artifact-manager's runtime-state.
type RuntimeState struct {
	CapsuleID    string
	Installed    []ArtifactSummary
	Capabilities string
}

// Message is murmur:message's message.
type Message struct {
	MessageID string
	ContextID *string
	Text      string
}

// TaskResult is murmur:message's task-result.
type TaskResult struct {
	TaskID, ContextID, State string
}

func optS(p *string) wasmhost.Option {
	if p == nil {
		return wasmhost.None
	}
	return wasmhost.Some(*p)
}

// Value returns the WIT value of in (a wasmhost.Value).
func (in ToolInput) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "data", Value: optS(in.Data)}, {Name: "log-path", Value: optS(in.LogPath)}}
}

// Value returns the WIT value of r (a wasmhost.Value).
func (r ToolResult) Value() wasmhost.Value {
	md := make(wasmhost.List, len(r.Metadata))
	for i, kv := range r.Metadata {
		md[i] = wasmhost.Tuple{kv[0], kv[1]}
	}
	return wasmhost.Record{
		{Name: "status", Value: wasmhost.Enum(r.Status)}, {Name: "summary", Value: optS(r.Summary)}, {Name: "data", Value: optS(r.Data)},
		{Name: "data-path", Value: optS(r.DataPath)}, {Name: "truncated", Value: r.Truncated}, {Name: "metadata", Value: md},
	}
}

// Value returns the WIT value of s (a wasmhost.Value).
func (s ArtifactSummary) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "name", Value: s.Name}, {Name: "version", Value: s.Version}, {Name: "runtime", Value: wasmhost.Enum(s.Runtime)}}
}

// Value returns the WIT value of a (a wasmhost.Value).
func (a ArtifactInfo) Value() wasmhost.Value {
	tags := make(wasmhost.List, len(a.Tags))
	for i, t := range a.Tags {
		tags[i] = t
	}
	return wasmhost.Record{{Name: "name", Value: a.Name}, {Name: "version", Value: a.Version}, {Name: "description", Value: a.Description}, {Name: "tags", Value: tags},
		{Name: "runtime", Value: wasmhost.Enum(a.Runtime)}, {Name: "input-schema", Value: optS(a.InputSchema)}, {Name: "output-schema", Value: optS(a.OutputSchema)}}
}

// Value returns the WIT value of s (a wasmhost.Value).
func (s RuntimeState) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "capsule-id", Value: s.CapsuleID}, {Name: "installed", Value: summaries(s.Installed)}, {Name: "capabilities", Value: s.Capabilities}}
}

// Value returns the WIT value of t (a wasmhost.Value).
func (t TaskResult) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "task-id", Value: t.TaskID}, {Name: "context-id", Value: t.ContextID}, {Name: "state", Value: t.State}}
}

// Value returns the WIT value of m (a wasmhost.Value).
func (m Message) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "message-id", Value: m.MessageID}, {Name: "context-id", Value: optS(m.ContextID)}, {Name: "text", Value: m.Text}}
}

func summaries(s []ArtifactSummary) wasmhost.List {
	out := make(wasmhost.List, len(s))
	for i, x := range s {
		out[i] = x.Value()
	}
	return out
}

// --- decoding guest values (shapes are guaranteed by wasmtime's type check,
// but decode defensively: a mismatch is an error, never a panic) ---

type decoder struct{ err error }

func (d *decoder) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, a...)
	}
}

func (d *decoder) record(v wasmhost.Value, n int) wasmhost.Record {
	r, ok := v.(wasmhost.Record)
	if !ok || len(r) != n {
		d.fail("want a record of %d fields, got %T", n, v)
		return make(wasmhost.Record, n)
	}
	return r
}

func (d *decoder) str(v wasmhost.Value) string {
	s, ok := v.(string)
	if !ok {
		d.fail("want string, got %T", v)
	}
	return s
}

func (d *decoder) optStr(v wasmhost.Value) *string {
	o, ok := v.(wasmhost.Option)
	if !ok {
		d.fail("want option<string>, got %T", v)
		return nil
	}
	if !o.Some {
		return nil
	}
	s := d.str(o.Value)
	return &s
}

func (d *decoder) enum(v wasmhost.Value) string {
	e, ok := v.(wasmhost.Enum)
	if !ok {
		d.fail("want enum, got %T", v)
	}
	return string(e)
}

// DecodeToolInput converts a guest's tool-input value.
func DecodeToolInput(v wasmhost.Value) (ToolInput, error) {
	var d decoder
	r := d.record(v, 2)
	in := ToolInput{Data: d.optStr(r[0].Value), LogPath: d.optStr(r[1].Value)}
	return in, d.err
}

// DecodeToolResult converts a guest's tool-result value.
func DecodeToolResult(v wasmhost.Value) (ToolResult, error) {
	var d decoder
	r := d.record(v, 6)
	out := ToolResult{
		Status: Status(d.enum(r[0].Value)), Summary: d.optStr(r[1].Value), Data: d.optStr(r[2].Value),
		DataPath: d.optStr(r[3].Value),
	}
	if b, ok := r[4].Value.(bool); ok {
		out.Truncated = b
	} else {
		d.fail("truncated: want bool")
	}
	if l, ok := r[5].Value.(wasmhost.List); ok {
		for _, e := range l {
			if t, ok := e.(wasmhost.Tuple); ok && len(t) == 2 {
				out.Metadata = append(out.Metadata, [2]string{d.str(t[0]), d.str(t[1])})
			} else {
				d.fail("metadata: want tuple<string, string>")
			}
		}
	} else if r[5].Value != nil {
		d.fail("metadata: want list")
	}
	return out, d.err
}

// DecodeMessage converts a guest's message value.
func DecodeMessage(v wasmhost.Value) (Message, error) {
	var d decoder
	r := d.record(v, 3)
	m := Message{MessageID: d.str(r[0].Value), ContextID: d.optStr(r[1].Value), Text: d.str(r[2].Value)}
	return m, d.err
}
