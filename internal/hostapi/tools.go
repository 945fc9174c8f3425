package hostapi

import (
	"context"
	"errors"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/wit"
)

// ToolRunCall names the call a tool's deadline stops, in call_deadline lines.
const ToolRunCall = tools.ToolRunCall

// Invoke implements murmur:tool-registry/invoke: it runs the declared tool
// artifact name (full or bare name, contracts §9) from the session's tool
// inventory, in a fresh instance bounded by the tool's own narrowed limits,
// and records one tool_call line. An undeclared name, a tool that cannot be
// loaded and a tool that traps, runs past its deadline or hits a resource
// limit all answer err with the reason: the capsule goes on.
func (s *Imports) Invoke(ctx context.Context, name string, in wit.ToolInput) (wit.ToolResult, error) {
	start := time.Now()
	rec := s.recorder()
	label := tools.Clip(name)
	var res wit.ToolResult
	t, rt, err := s.lookupTool(name)
	switch {
	case err == nil && rt != nil:
		label = rt.Name()
		res, err = rt.Invoke(ctx, in)
		s.inflight.Done()
	case err == nil:
		label = t.Name()
		res, err = t.Run(ctx, tools.Invocation{Input: in, Recorder: rec})
		s.inflight.Done()
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	rec.ToolCall(label, start, inputBytes(in), outputBytes(res, err), errText)
	return res, err
}

// runtimeTool is a runtime-kind entry a script may invoke (delegate-task,
// contracts §18 "Script capsules").
type runtimeTool interface {
	Name() string
	Invoke(ctx context.Context, in wit.ToolInput) (wit.ToolResult, error)
}

// lookupTool finds a component tool, or a runtime tool a script may
// invoke, in the inventory. A tool it returns counts as in flight until
// the caller calls s.inflight.Done.
func (s *Imports) lookupTool(name string) (*tools.WASM, runtimeTool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("hostapi: the session is over")
	}
	e, err := s.tools.Lookup(name)
	if err != nil {
		return nil, nil, err
	}
	if rt, ok := e.(runtimeTool); ok && e.Kind() == tools.KindRuntime {
		s.inflight.Add(1)
		return nil, rt, nil
	}
	t, ok := e.(*tools.WASM)
	if !ok {
		return nil, nil, diag.New("E-RUN-062", "tool %q is the %s %s, which murmur:tool-registry cannot invoke: it runs tool components", tools.Clip(name), e.Kind(), e.Name()).
			WithHint("declare a tool artifact (runtime: tool) instead")
	}
	s.inflight.Add(1)
	return t, nil, nil
}

// inputBytes and outputBytes measure the payload of a call: the data
// strings (what a tool consumes and produces), not the fixed record fields.
func inputBytes(in wit.ToolInput) int {
	if in.Data == nil {
		return 0
	}
	return len(*in.Data)
}

func outputBytes(r wit.ToolResult, err error) int {
	if err != nil || r.Data == nil {
		return 0
	}
	return len(*r.Data)
}
