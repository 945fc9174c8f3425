package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Typed access to the murmur interfaces of contracts §9: Go structs for the
// WIT records, registration helpers for the host interfaces, and calls of the
// exported run functions. The runtime decides what the host functions do.

// Interface names (as components import and export them).
const (
	IfaceCapsuleRun      = "murmur:capsule/run@0.1.0"
	IfaceToolRun         = "murmur:tool/run@0.1.0"
	IfaceToolRegistry    = "murmur:tool-registry/invoke@0.1.0"
	IfaceArtifactManager = "murmur:artifact-manager/manage@0.1.0"
	IfaceMessageSend     = "murmur:message/send@0.1.0"
	IfaceTask            = "murmur:task/task@0.1.0"
	IfaceTextChunks      = "murmur:text/chunks@0.1.0"
)

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

// WIT types of the records above.
var (
	TStatus     = TEnum("passed", "failed", "error")
	TToolInput  = TRecord(Field{"data", TOption(TString)}, Field{"log-path", TOption(TString)})
	TToolResult = TRecord(
		Field{"status", TStatus},
		Field{"summary", TOption(TString)},
		Field{"data", TOption(TString)},
		Field{"data-path", TOption(TString)},
		Field{"truncated", TBool},
		Field{"metadata", TList(TTuple(TString, TString))},
	)
	TRuntimeType     = TEnum("wasm", "native")
	TArtifactSummary = TRecord(Field{"name", TString}, Field{"version", TString}, Field{"runtime", TRuntimeType})
	TArtifactInfo    = TRecord(Field{"name", TString}, Field{"version", TString}, Field{"description", TString},
		Field{"tags", TList(TString)}, Field{"runtime", TRuntimeType},
		Field{"input-schema", TOption(TString)}, Field{"output-schema", TOption(TString)})
	TRuntimeState = TRecord(Field{"capsule-id", TString}, Field{"installed", TList(TArtifactSummary)},
		Field{"capabilities", TString})
	TMessage    = TRecord(Field{"message-id", TString}, Field{"context-id", TOption(TString)}, Field{"text", TString})
	TTaskResult = TRecord(Field{"task-id", TString}, Field{"context-id", TString}, Field{"state", TString})
)

func optS(p *string) Option {
	if p == nil {
		return None
	}
	return Some(*p)
}

// Value returns the WIT value of in.
func (in ToolInput) Value() Value {
	return Record{{"data", optS(in.Data)}, {"log-path", optS(in.LogPath)}}
}

// Value returns the WIT value of r.
func (r ToolResult) Value() Value {
	md := make(List, len(r.Metadata))
	for i, kv := range r.Metadata {
		md[i] = Tuple{kv[0], kv[1]}
	}
	return Record{
		{"status", Enum(r.Status)}, {"summary", optS(r.Summary)}, {"data", optS(r.Data)},
		{"data-path", optS(r.DataPath)}, {"truncated", r.Truncated}, {"metadata", md},
	}
}

// Value returns the WIT value of s.
func (s ArtifactSummary) Value() Value {
	return Record{{"name", s.Name}, {"version", s.Version}, {"runtime", Enum(s.Runtime)}}
}

// Value returns the WIT value of a.
func (a ArtifactInfo) Value() Value {
	tags := make(List, len(a.Tags))
	for i, t := range a.Tags {
		tags[i] = t
	}
	return Record{{"name", a.Name}, {"version", a.Version}, {"description", a.Description}, {"tags", tags},
		{"runtime", Enum(a.Runtime)}, {"input-schema", optS(a.InputSchema)}, {"output-schema", optS(a.OutputSchema)}}
}

// Value returns the WIT value of s.
func (s RuntimeState) Value() Value {
	return Record{{"capsule-id", s.CapsuleID}, {"installed", summaries(s.Installed)}, {"capabilities", s.Capabilities}}
}

// Value returns the WIT value of t.
func (t TaskResult) Value() Value {
	return Record{{"task-id", t.TaskID}, {"context-id", t.ContextID}, {"state", t.State}}
}

// Value returns the WIT value of m.
func (m Message) Value() Value {
	return Record{{"message-id", m.MessageID}, {"context-id", optS(m.ContextID)}, {"text", m.Text}}
}

func summaries(s []ArtifactSummary) List {
	out := make(List, len(s))
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

func (d *decoder) record(v Value, n int) Record {
	r, ok := v.(Record)
	if !ok || len(r) != n {
		d.fail("want a record of %d fields, got %T", n, v)
		return make(Record, n)
	}
	return r
}

func (d *decoder) str(v Value) string {
	s, ok := v.(string)
	if !ok {
		d.fail("want string, got %T", v)
	}
	return s
}

func (d *decoder) optStr(v Value) *string {
	o, ok := v.(Option)
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

func (d *decoder) enum(v Value) string {
	e, ok := v.(Enum)
	if !ok {
		d.fail("want enum, got %T", v)
	}
	return string(e)
}

// DecodeToolInput converts a guest's tool-input value.
func DecodeToolInput(v Value) (ToolInput, error) {
	var d decoder
	r := d.record(v, 2)
	in := ToolInput{Data: d.optStr(r[0].Value), LogPath: d.optStr(r[1].Value)}
	return in, d.err
}

// DecodeToolResult converts a guest's tool-result value.
func DecodeToolResult(v Value) (ToolResult, error) {
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
	if l, ok := r[5].Value.(List); ok {
		for _, e := range l {
			if t, ok := e.(Tuple); ok && len(t) == 2 {
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
func DecodeMessage(v Value) (Message, error) {
	var d decoder
	r := d.record(v, 3)
	m := Message{MessageID: d.str(r[0].Value), ContextID: d.optStr(r[1].Value), Text: d.str(r[2].Value)}
	return m, d.err
}

// errValue turns a helper's Go error into the WIT err(string) answer, unless
// it was wrapped with Fatal (then the guest traps).
func errValue(err error) (Value, error) {
	var f *fatalError
	if errors.As(err, &f) {
		return nil, f.err
	}
	return Err(strings.ToValidUTF8(err.Error(), "\uFFFD")), nil
}

// ToolRegistry grants murmur:tool-registry/invoke@0.1.0. A returned error is
// answered as err(message) and the guest goes on (wrap it with Fatal to trap).
func (h *Host) ToolRegistry(fn func(ctx context.Context, name string, in ToolInput) (ToolResult, error)) {
	h.Define(IfaceToolRegistry, "invoke", func(ctx context.Context, args []Value) (Value, error) {
		name, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("invoke: name is %T", args[0])
		}
		in, err := DecodeToolInput(args[1])
		if err != nil {
			return nil, fmt.Errorf("invoke: %w", err)
		}
		res, err := fn(ctx, name, in)
		if err != nil {
			return errValue(err)
		}
		return Ok(res.Value()), nil
	})
}

// ArtifactManager is what murmur:artifact-manager/manage@0.1.0 asks of the
// runtime. Errors of the functions whose WIT result has an error side are
// answered as err(message) (wrap with Fatal to trap); List's error traps.
type ArtifactManager interface {
	List(ctx context.Context) ([]ArtifactSummary, error)
	Describe(ctx context.Context, name string) (ArtifactInfo, error)
	Search(ctx context.Context, query string) ([]ArtifactSummary, error)
	Pull(ctx context.Context, name, version string) (ArtifactSummary, error)
	Remove(ctx context.Context, name string) (bool, error)
	Diagnostics(ctx context.Context) (RuntimeState, error)
}

// ArtifactManager grants murmur:artifact-manager/manage@0.1.0.
func (h *Host) ArtifactManager(m ArtifactManager) {
	const I = IfaceArtifactManager
	str := func(v Value) string { s, _ := v.(string); return s }
	h.Define(I, "list", func(ctx context.Context, _ []Value) (Value, error) {
		l, err := m.List(ctx)
		if err != nil {
			return nil, err
		}
		return summaries(l), nil
	})
	h.Define(I, "describe", func(ctx context.Context, a []Value) (Value, error) {
		info, err := m.Describe(ctx, str(a[0]))
		if err != nil {
			return errValue(err)
		}
		return Ok(info.Value()), nil
	})
	h.Define(I, "search", func(ctx context.Context, a []Value) (Value, error) {
		l, err := m.Search(ctx, str(a[0]))
		if err != nil {
			return errValue(err)
		}
		return Ok(summaries(l)), nil
	})
	h.Define(I, "pull", func(ctx context.Context, a []Value) (Value, error) {
		s, err := m.Pull(ctx, str(a[0]), str(a[1]))
		if err != nil {
			return errValue(err)
		}
		return Ok(s.Value()), nil
	})
	h.Define(I, "remove", func(ctx context.Context, a []Value) (Value, error) {
		ok, err := m.Remove(ctx, str(a[0]))
		if err != nil {
			return errValue(err)
		}
		return Ok(ok), nil
	})
	h.Define(I, "diagnostics", func(ctx context.Context, _ []Value) (Value, error) {
		s, err := m.Diagnostics(ctx)
		if err != nil {
			return errValue(err)
		}
		return Ok(s.Value()), nil
	})
}

// MessageSend grants murmur:message/send@0.1.0. A returned error is answered
// as err(message) (wrap with Fatal to trap).
func (h *Host) MessageSend(fn func(ctx context.Context, peerURL string, m Message) (TaskResult, error)) {
	h.Define(IfaceMessageSend, "send", func(ctx context.Context, a []Value) (Value, error) {
		peer, _ := a[0].(string)
		m, err := DecodeMessage(a[1])
		if err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
		tr, err := fn(ctx, peer, m)
		if err != nil {
			return errValue(err)
		}
		return Ok(tr.Value()), nil
	})
}

// Task grants murmur:task/task@0.1.0 (request-input). Its WIT result has no
// error side: a returned error traps the guest.
func (h *Host) Task(fn func(ctx context.Context, prompt string) (string, error)) {
	h.Define(IfaceTask, "request-input", func(ctx context.Context, a []Value) (Value, error) {
		p, _ := a[0].(string)
		s, err := fn(ctx, p)
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

// TextChunks grants murmur:text/chunks@0.1.0; thinking tells emit-chunk from
// emit-thinking-chunk. A returned error traps the guest.
func (h *Host) TextChunks(fn func(ctx context.Context, text string, thinking bool) error) {
	for _, c := range []struct {
		name     string
		thinking bool
	}{{"emit-chunk", false}, {"emit-thinking-chunk", true}} {
		h.Define(IfaceTextChunks, c.name, func(ctx context.Context, a []Value) (Value, error) {
			s, _ := a[0].(string)
			return nil, fn(ctx, s, c.thinking)
		})
	}
}

// CallCapsuleRun calls murmur:capsule/run@0.1.0#run.
func (i *Instance) CallCapsuleRun(ctx context.Context) error {
	_, err := i.Call(ctx, IfaceCapsuleRun, "run")
	return err
}

// CallToolRun calls murmur:tool/run@0.1.0#run.
func (i *Instance) CallToolRun(ctx context.Context, in ToolInput) (ToolResult, error) {
	v, err := i.Call(ctx, IfaceToolRun, "run", in.Value())
	if err != nil {
		return ToolResult{}, err
	}
	return DecodeToolResult(v)
}
