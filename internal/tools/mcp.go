package tools

import (
	"context"
	"encoding/json"

	"github.com/murmur-go/murmur/internal/mcp"
)

// KindMCP is a tool of an MCP server (docs/mcp.md).
const KindMCP = "mcp"

// MCP is one allow-listed tool of an MCP server, named as the model calls
// it (mcp__<server>__<tool>). A script cannot invoke it.
type MCP struct {
	srv  *mcp.Server
	tool mcp.Tool
}

// NewMCP is the entry of one offered tool of a started server.
func NewMCP(srv *mcp.Server, t mcp.Tool) *MCP { return &MCP{srv: srv, tool: t} }

// MCPEntries are the entries of every offered tool of the servers, in
// manifest order.
func MCPEntries(servers []*mcp.Server) []Entry {
	var out []Entry
	for _, s := range servers {
		for _, t := range s.Tools() {
			out = append(out, NewMCP(s, t))
		}
	}
	return out
}

func (m *MCP) Name() string            { return m.tool.ModelName }
func (m *MCP) Kind() string            { return KindMCP }
func (m *MCP) Description() string     { return m.tool.Description }
func (m *MCP) Schema() json.RawMessage { return m.tool.Schema }

// Server is the server's bare name; Tool the server's name for the tool.
func (m *MCP) Server() string { return m.srv.Name() }
func (m *MCP) Tool() string   { return m.tool.Name }

// Call sends one tools/call with the model's input as its arguments.
func (m *MCP) Call(ctx context.Context, c *Call) Outcome {
	if c.Task == nil {
		return refuseScript(m, c.Name)
	}
	// The call carries its own span's traceparent, opened now so the
	// server's spans nest under it; without span export, the task's own.
	tp := c.Task.TraceParent
	if o, ok := c.Task.Lines.(callSpanOpener); ok {
		if own := o.OpenToolCall(c.Task.ParentID, c.Task.ID); own != "" {
			tp = own
		}
	}
	r := m.srv.Call(ctx, m.tool.Name, json.RawMessage(dataOf(c.Input)), c.Task.ID, tp)
	transport := "pipe"
	if m.srv.Transport() == "http" {
		transport = "tcp"
	}
	o := Outcome{Text: r.Text, Err: r.Err, Ending: r.Ending, MCP: &MCPCall{Server: m.srv.Name(), Tool: m.tool.Name,
		Transport: transport, Protocol: m.srv.Protocol()}}
	return o
}

// callSpanOpener is a TaskCall's Lines that can open a call's span before
// the call is sent (*trace.Recorder): its tool_call line then ends it.
type callSpanOpener interface {
	OpenToolCall(parent, toolCallID string) string
}

// MCPCall names an MCP call's server and tool for its tool_call line, and
// its transport (pipe, tcp) and protocol version for its span.
type MCPCall struct{ Server, Tool, Transport, Protocol string }
