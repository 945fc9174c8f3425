package trace

// The lines of an agent's MCP servers (docs/mcp.md): one mcp_server_start
// per start, followed by exactly one mcp_server_end for the same start, and
// mcp_denied for each request of the server's the runtime refused.

// Event types of MCP servers.
const (
	TypeMCPServerStart = "mcp_server_start"
	TypeMCPServerEnd   = "mcp_server_end"
	TypeMCPDenied      = "mcp_denied"
)

// MCPServerStart is one start of a server: what ran, and what it said of
// itself (a server is not pinned by the lock, so this is the record).
type MCPServerStart struct {
	Server    string `json:"server"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	Start     int    `json:"start"`
	Transport string `json:"transport"` // stdio | http
	// stdio only (null for http).
	Binary       *string  `json:"binary"`
	BinarySHA256 *string  `json:"binary_sha256"`
	Args         []string `json:"args"`
	EnvNames     []string `json:"env_names"`
	PID          *int     `json:"pid"`
	// http only (null for stdio).
	URL         *string  `json:"url"`
	HeaderNames []string `json:"header_names"`
	// Containment is the tier a stdio server ran under (null for http).
	Containment     *MCPContainment `json:"containment"`
	Status          string          `json:"status"` // ok | error
	Error           *string         `json:"error"`
	ProtocolVersion string          `json:"protocol_version"`
	ServerInfo      MCPServerInfo   `json:"server_info"`
	Listed          int             `json:"listed"`
	Tools           []MCPToolDef    `json:"tools"`
	DurationMS      int64           `json:"duration_ms"`
}

// MCPContainment is a stdio server's achieved tier and its mechanism.
type MCPContainment struct {
	Achieved  string `json:"achieved"`
	Mechanism string `json:"mechanism"`
}

// MCPServerInfo is the serverInfo a server reported.
type MCPServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// MCPToolDef is one offered tool: the SHA-256 of the compact JSON of its
// {"name","description","inputSchema"}.
type MCPToolDef struct {
	Name      string `json:"name"`
	ModelName string `json:"model_name"`
	SHA256    string `json:"sha256"`
}

// MCPServerEnd ends one start.
type MCPServerEnd struct {
	Server string `json:"server"`
	Start  int    `json:"start"`
	// Reason: session_end, start_failed, exited, protocol_error,
	// message_too_large, transport_error.
	Reason      string  `json:"reason"`
	ExitCode    *int    `json:"exit_code"`
	Signal      *string `json:"signal"`
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	Denied      int     `json:"denied"`
	StderrBytes int64   `json:"stderr_bytes"`
	LogPath     string  `json:"log_path"`
	DurationMS  int64   `json:"duration_ms"`
}

// MCPDenied is a request of the server's the runtime answered -32601.
type MCPDenied struct {
	Server     string  `json:"server"`
	Method     string  `json:"method"`
	ToolCallID *string `json:"tool_call_id"`
}

func mcpTypeOf(v any) (string, bool) {
	switch v.(type) {
	case MCPServerStart, *MCPServerStart:
		return TypeMCPServerStart, true
	case MCPServerEnd, *MCPServerEnd:
		return TypeMCPServerEnd, true
	case MCPDenied, *MCPDenied:
		return TypeMCPDenied, true
	}
	return "", false
}
