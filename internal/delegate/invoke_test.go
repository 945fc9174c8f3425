package delegate

import (
	"context"

	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/wit"
)

// Invoke is a script's call of delegate-task, as the inventory makes it.
func (t *Tool) Invoke(ctx context.Context, in wit.ToolInput) (wit.ToolResult, error) {
	o := t.Call(ctx, &tools.Call{Name: ToolName, Input: in})
	return o.Result, o.Err
}
