package trace

// TypeShell is the event_type of a shell tool call (docs/agent-capsules.md).
const TypeShell = "shell"

// Shell is one shell tool call the model asked for, under its turn's
// inference line; it counts in shell_calls, not tool_calls.
type Shell struct {
	TaskID     string `json:"task_id"`
	Turn       int    `json:"turn"`
	ToolCallID string `json:"tool_call_id"`
	// Binary is the resolved path of the allowed binary.
	Binary string `json:"binary"`
	// Command is the model's command string (clipped; the log keeps it
	// whole).
	Command     string `json:"command"`
	ExitCode    int    `json:"exit_code"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	DurationMS  int64  `json:"duration_ms"`
	// Truncated is set when the model saw less than a whole stream.
	Truncated bool `json:"truncated"`
	// LogPath is <records dir>/logs/shell/<tool_call_id>.log.
	LogPath string `json:"log_path"`
	// PlanCall marks a plan shell step's attempt.
	PlanCall
}
