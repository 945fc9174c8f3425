// Package trace writes and reads trace.jsonl, a session's record of what
// happened (docs/running-capsules.md).
//
// Every event goes through a Writer: one JSON object per line, handed to the
// kernel with one write(2) as the event happens and never buffered across
// events, so a session killed with SIGKILL leaves every line it had written.
// A write that fails (a full disk) never stops the session: the file is cut
// back to the last whole line, so what was already written stays readable, the
// failure is reported once as a coded warning, and later events are tried
// again.
package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/ids"
)

// FileName is the trace's name in a session's records dir.
const FileName = "trace.jsonl"

// Event types (docs/running-capsules.md).
const (
	TypeSessionStart   = "session_start"
	TypeToolCall       = "tool_call"
	TypeArtifactPulled = "artifact_pulled"
	TypeA2ASend        = "a2a_send"
	TypeCallDeadline   = "call_deadline"
	TypeSessionEnd     = "session_end"
)

// Script capsule endings (session_end.exit_status).
const (
	EndOK               = "ok"
	EndTrapped          = "trapped"
	EndDeadlineExceeded = "deadline_exceeded"
	EndResourceLimit    = "resource_limit"
	EndFailed           = "failed"
)

// WarnWriteFailed is the warning a failed trace write raises (once per Writer).
const WarnWriteFailed = "W-IO-050"

// SessionStart is the first line of every trace.
type SessionStart struct {
	CapsuleName     string          `json:"capsule_name"`
	CapsuleVersion  string          `json:"capsule_version"`
	Kind            string          `json:"kind"` // script | agent
	ToolsDeclared   []string        `json:"tools_declared"`
	EffectiveGrants json.RawMessage `json:"effective_grants"`
	SpawnedBy       *string         `json:"spawned_by"`
	DelegationID    string          `json:"delegation_id,omitempty"`
	// FormationID is set for every session in a formation; the other three
	// on launcher-started members only.
	FormationID      string    `json:"formation_id,omitempty"`
	FormationMember  string    `json:"formation_member,omitempty"`
	FormationEntry   *bool     `json:"formation_entry,omitempty"`
	FormationCallees *[]string `json:"formation_callees,omitempty"`
}

// ToolCall is one murmur:tool-registry/invoke.
type ToolCall struct {
	ToolName    string  `json:"tool_name"`
	InputBytes  int     `json:"input_bytes"`
	OutputBytes int     `json:"output_bytes"`
	DurationMS  int64   `json:"duration_ms"`
	Status      string  `json:"status"` // ok | error
	Error       *string `json:"error"`
	// StateStore is the state store the call's component saw (absent when
	// it saw none).
	StateStore string `json:"state_store,omitempty"`
}

// ArtifactPulled is one murmur:artifact-manager pull.
type ArtifactPulled struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Store   string `json:"store"`
}

// A2ASend is one murmur:message/send.
type A2ASend struct {
	PeerURL   string `json:"peer_url"`
	MessageID string `json:"message_id"`
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id"`
	State     string `json:"state"`
}

// CallDeadline records a component call stopped while waiting on the runtime.
type CallDeadline struct {
	Component  string `json:"component"`
	Call       string `json:"call"`
	DeadlineMS int64  `json:"deadline_ms"`
}

// SessionEnd is the last line of a trace whose session ended in order.
type SessionEnd struct {
	ExitStatus string  `json:"exit_status"`
	Reason     *string `json:"reason"`
	DurationMS int64   `json:"duration_ms"`
	ToolCalls  int     `json:"tool_calls"`
	ToolErrors int     `json:"tool_errors"`
}

// typeOf maps an event value to its event_type.
func typeOf(v any) (string, error) {
	switch v.(type) {
	case SessionStart, *SessionStart:
		return TypeSessionStart, nil
	case ToolCall, *ToolCall:
		return TypeToolCall, nil
	case ArtifactPulled, *ArtifactPulled:
		return TypeArtifactPulled, nil
	case A2ASend, *A2ASend:
		return TypeA2ASend, nil
	case CallDeadline, *CallDeadline:
		return TypeCallDeadline, nil
	case SessionEnd, *SessionEnd:
		return TypeSessionEnd, nil
	}
	if t, ok := agentTypeOf(v); ok {
		return t, nil
	}
	if t, ok := delegationTypeOf(v); ok {
		return t, nil
	}
	if t, ok := gateTypeOf(v); ok {
		return t, nil
	}
	if t, ok := planTypeOf(v); ok {
		return t, nil
	}
	if t, ok := mcpTypeOf(v); ok {
		return t, nil
	}
	if t, ok := peerTypeOf(v); ok {
		return t, nil
	}
	if t, ok := formationTypeOf(v); ok {
		return t, nil
	}
	return "", fmt.Errorf("trace: %T is not a trace event", v)
}

// envelope is the part every line has.
type envelope struct {
	EventType string  `json:"event_type"`
	EventID   string  `json:"event_id"`
	ParentID  *string `json:"parent_id"`
	SessionID string  `json:"session_id"`
	Timestamp int64   `json:"timestamp"`
}

// Writer appends events to one session's trace.jsonl. It is safe for
// concurrent use: each event is one whole line, lines never interleave.
type Writer struct {
	mu        sync.Mutex
	f         *os.File
	sessionID string
	startID   string // event_id of session_start, once written
	good      int64  // offset just past the last whole line written
	warned    bool
	dropped   int
	warn      func(diag.Warning)
	now       func() time.Time
	closed    bool
}

// Options configure a Writer.
type Options struct {
	// Warn receives the one warning a failing write raises; nil drops it.
	Warn func(diag.Warning)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Create makes path (0600; it must not exist) and returns a Writer for the
// session's events. Nothing is written until the first event.
func Create(path, sessionID string, opts Options) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-051", "cannot create the trace").
			WithHint("check that the records dir is writable and has free space")
	}
	w := &Writer{f: f, sessionID: sessionID, warn: opts.Warn, now: opts.Now}
	if w.now == nil {
		w.now = time.Now
	}
	return w, nil
}

// SessionID is the session every line names.
func (w *Writer) SessionID() string { return w.sessionID }

// StartID is the event_id of session_start ("" before it is written).
func (w *Writer) StartID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.startID
}

// Dropped is how many events could not be written.
func (w *Writer) Dropped() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Emit writes one event under the session (its parent is session_start, or
// null for session_start itself) and returns its event_id. A write that fails
// is not returned as an error: the session goes on, and the failure is
// reported through the warning callback once.
func (w *Writer) Emit(ev any) string { return w.EmitUnder("", ev) }

// EmitUnder writes one event whose parent_id is parent ("" means the
// session's session_start).
func (w *Writer) EmitUnder(parent string, ev any) string {
	typ, err := typeOf(ev)
	if err != nil {
		panic(err) // a programming error: only this package's event types are written
	}
	id := ids.New(ids.Event)
	body, err := json.Marshal(ev)
	if err != nil {
		panic(fmt.Errorf("trace: encoding %s: %w", typ, err))
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	env := envelope{EventType: typ, EventID: id, SessionID: w.sessionID, Timestamp: w.now().UnixMilli()}
	switch {
	case typ == TypeSessionStart:
		// null parent
	case parent != "":
		env.ParentID = &parent
	case w.startID != "":
		p := w.startID
		env.ParentID = &p
	}
	line := encodeLine(env, body)
	if typ == TypeSessionStart {
		w.startID = id
	}
	w.write(line)
	return id
}

// encodeLine joins the envelope and the event's fields into one object.
func encodeLine(env envelope, body []byte) []byte {
	head, _ := json.Marshal(env) // cannot fail: strings and ints
	line := make([]byte, 0, len(head)+len(body)+2)
	line = append(line, head[:len(head)-1]...)
	if len(body) > 2 { // "{}" adds nothing
		line = append(line, ',')
		line = append(line, body[1:len(body)-1]...)
	}
	return append(line, '}', '\n')
}

// write hands line to the kernel in one call. On failure the file is cut
// back to the last whole line so a half line never joins the next one.
func (w *Writer) write(line []byte) {
	if w.closed {
		w.fail(errors.New("trace already closed"))
		return
	}
	n, err := w.f.Write(line)
	if err == nil && n == len(line) {
		w.good += int64(n)
		return
	}
	if err == nil {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(line))
	}
	if n > 0 {
		_ = w.f.Truncate(w.good) // O_APPEND: the next write lands at the new end
	}
	w.fail(err)
}

func (w *Writer) fail(err error) {
	w.dropped++
	if w.warned {
		return
	}
	w.warned = true
	if w.warn != nil {
		w.warn(diag.Warn(WarnWriteFailed,
			"cannot write to the trace %s (%v); the session goes on, and events that cannot be written are lost",
			w.f.Name(), err))
	}
}

// Close closes the file. Lines were written as they happened, so nothing is
// pending; Close syncs once so the finished trace survives a power cut.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	_ = w.f.Sync()
	return w.f.Close()
}
