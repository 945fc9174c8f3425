package wit

import (
	"context"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// CallCapsuleRun calls a script capsule's murmur:capsule/run@0.1.0#run once.
// Its error is the engine's typed ending (see wasmhost.TrapError and the
// others), or E-RUN-103 when the component does not export it.
func CallCapsuleRun(ctx context.Context, inst *wasmhost.Instance) error {
	_, err := inst.Call(ctx, IfaceCapsuleRun, RunFunc)
	return err
}

// CallToolRun calls a tool's (or driver's) murmur:tool/run@0.1.0#run with in
// and decodes its tool-result.
func CallToolRun(ctx context.Context, inst *wasmhost.Instance, in ToolInput) (ToolResult, error) {
	v, err := inst.Call(ctx, IfaceToolRun, RunFunc, in.Value())
	if err != nil {
		return ToolResult{}, err
	}
	return DecodeToolResult(v)
}
