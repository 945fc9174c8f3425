package wasmhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// A script capsule run: grant the tool registry, run murmur:capsule/run
// under limits, and tell the endings apart.
func Example() {
	eng, err := wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	wat, _ := os.ReadFile("testdata/capsule.wat")
	comp, err := eng.Compile(wat)
	if err != nil {
		panic(err)
	}
	defer comp.Close()

	host := wasmhost.NewHost()
	host.ToolRegistry(func(ctx context.Context, name string, in wasmhost.ToolInput) (wasmhost.ToolResult, error) {
		if name != "echo" {
			return wasmhost.ToolResult{}, fmt.Errorf("tool not allowlisted: %s", name)
		}
		return wasmhost.ToolResult{Status: wasmhost.StatusPassed, Data: in.Data}, nil
	})
	inst, err := eng.Instantiate(context.Background(), comp, wasmhost.RunConfig{
		Limits: wasmhost.Limits{MemoryBytes: 64 << 20, Deadline: 5 * time.Second},
		WASI:   wasmhost.WASI{Env: map[string]string{"MURMUR_SESSION_ID": "ses_example"}},
		Host:   host,
	})
	if err != nil {
		panic(err)
	}
	defer inst.Close()

	err = inst.CallCapsuleRun(context.Background())
	var trap *wasmhost.TrapError
	var deadline *wasmhost.DeadlineError
	var limit *wasmhost.ResourceLimitError
	switch {
	case err == nil:
		fmt.Println("ok")
	case errors.As(err, &trap):
		fmt.Println("trapped:", trap.Message)
	case errors.As(err, &deadline):
		fmt.Println("deadline_exceeded, waiting:", deadline.Waiting, deadline.Call)
	case errors.As(err, &limit):
		fmt.Println("resource_limit:", limit.Which)
	default:
		fmt.Println("failed:", err)
	}
	// Output: ok
}
