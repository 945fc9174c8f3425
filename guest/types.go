package guest

import (
	"os"
	"path/filepath"
)

// Status is murmur:tool/run's status enum.
type Status uint8

// The status cases, in WIT order (the order is the wire encoding).
const (
	StatusPassed Status = iota
	StatusFailed
	StatusError
)

func (s Status) String() string {
	switch s {
	case StatusPassed:
		return "passed"
	case StatusFailed:
		return "failed"
	case StatusError:
		return "error"
	}
	return "Status(" + itoa(uint32(s)) + ")"
}

// Some returns a pointer to s, for the option<string> fields (nil is none).
func Some(s string) *string { return &s }

// ToolInput is murmur:tool/run's tool-input record.
type ToolInput struct {
	Data    *string
	LogPath *string
}

// Pair is one metadata entry of a ToolResult (a WIT tuple<string, string>).
type Pair struct {
	Key, Value string
}

// ToolResult is murmur:tool/run's tool-result record.
type ToolResult struct {
	Status    Status
	Summary   *string
	Data      *string
	DataPath  *string
	Truncated bool
	Metadata  []Pair
}

// RuntimeType is murmur:artifact-manager/manage's runtime-type enum: how an artifact
// is implemented (not the manifest's runtime key).
type RuntimeType uint8

// The runtime-type cases, in WIT order.
const (
	RuntimeWasm RuntimeType = iota
	RuntimeNative
)

func (r RuntimeType) String() string {
	switch r {
	case RuntimeWasm:
		return "wasm"
	case RuntimeNative:
		return "native"
	}
	return "RuntimeType(" + itoa(uint32(r)) + ")"
}

// ArtifactSummary is the artifact-summary record.
type ArtifactSummary struct {
	Name    string
	Version string
	Runtime RuntimeType
}

// ArtifactInfo is the artifact-info record returned by DescribeArtifact.
type ArtifactInfo struct {
	Name         string
	Version      string
	Description  string
	Tags         []string
	Runtime      RuntimeType
	InputSchema  *string
	OutputSchema *string
}

// RuntimeState is the runtime-state record returned by Diagnostics.
type RuntimeState struct {
	CapsuleID    string
	Installed    []ArtifactSummary
	Capabilities string
}

// Message is murmur:message/send's message record.
type Message struct {
	MessageID string
	ContextID *string
	Text      string
}

// TaskResult is the peer's immediate answer to Send.
type TaskResult struct {
	TaskID    string
	ContextID string
	State     string
}

// HostError is the err case of a murmur host call: the host's message, verbatim, and
// the function that returned it.
type HostError struct {
	Func    string // for example "murmur:tool-registry/invoke@0.1.0#invoke"
	Message string
}

func (e *HostError) Error() string { return e.Func + ": " + e.Message }

// TaskPath is where a component finds its task: the runtime dir is preopened as
// murmur-runtime/ (read-only) and the task is its task.md.
const TaskPath = "murmur-runtime/task.md"

// ReadTask returns the session's task text (the contents of TaskPath).
func ReadTask() (string, error) {
	b, err := os.ReadFile(TaskPath)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ResultPath is where a script capsule leaves its result, in its work folder.
const ResultPath = "out/result.txt"

// WriteResult writes text to ResultPath, creating out/ when needed.
func WriteResult(text string) error {
	if err := os.MkdirAll(filepath.Dir(ResultPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(ResultPath, []byte(text), 0o644)
}

// itoa avoids strconv in the smallest paths of the kit.
func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}
