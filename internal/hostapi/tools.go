package hostapi

import (
	"context"
	"errors"

	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/wit"
)

// ToolRunCall names the call a tool's deadline stops, in call_deadline lines.
const ToolRunCall = tools.ToolRunCall

// Invoke implements murmur:tool-registry/invoke over the session's tool
// inventory, by its full or bare name: the inventory runs the
// tool, in a fresh instance bounded by the tool's own narrowed limits, and
// records one tool_call line. An undeclared name, a tool that cannot be
// loaded and a tool that traps, runs past its deadline or hits a resource
// limit all answer err with the reason: the capsule goes on.
func (s *Imports) Invoke(ctx context.Context, name string, in wit.ToolInput) (wit.ToolResult, error) {
	c := tools.Call{Name: name, Input: in, Recorder: s.recorder()}
	s.mu.Lock()
	if s.closed {
		c.Refused = errors.New("hostapi: the session is over")
	} else {
		s.inflight.Add(1)
		defer s.inflight.Done()
	}
	s.mu.Unlock()
	o := s.tools.Call(ctx, c)
	return o.Result, o.Err
}
