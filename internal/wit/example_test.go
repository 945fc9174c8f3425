package wit_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// A script capsule run: grant the tool registry, run murmur:capsule/run
// under the manifest's limits, and tell the endings apart.
func Example() {
	eng, err := wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	wat, _ := os.ReadFile("../wasmhost/testdata/capsule.wat")
	comp, err := eng.Compile(wat)
	if err != nil {
		panic(err)
	}
	defer comp.Close()
	if !wit.ExportsCapsuleRun(comp) {
		panic("not a script capsule")
	}

	host := wasmhost.NewHost()
	wit.GrantToolRegistry(host, func(ctx context.Context, name string, in wit.ToolInput) (wit.ToolResult, error) {
		if name != "echo" {
			return wit.ToolResult{}, fmt.Errorf("tool not allowlisted: %s", name)
		}
		return wit.ToolResult{Status: wit.StatusPassed, Data: in.Data}, nil
	})
	inst, err := eng.Instantiate(context.Background(), comp, wasmhost.RunConfig{
		Limits: grant.Limits(manifest.Capabilities{}.EffLimits()),
		WASI:   wasmhost.WASI{Env: map[string]string{"MURMUR_SESSION_ID": "ses_example"}},
		Host:   host,
	})
	if err != nil {
		panic(err)
	}
	defer inst.Close()

	err = wit.CallCapsuleRun(context.Background(), inst)
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
