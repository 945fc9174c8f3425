package hostapi

import (
	"context"
	"os"
	"testing"

	"github.com/murmur-go/murmur/internal/script"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// scriptImports is the adapter `mur run` uses (internal/cli): the script
// runtime hands its recorder to Define, which grants this package's
// interfaces recording through it.
type scriptImports struct{ s *Session }

func (i scriptImports) Define(h *wasmhost.Host, rec *script.Recorder) error {
	i.s.Register(h, rec)
	return nil
}

// TestScriptRunWithHostInterfaces runs capsule_echo.wat through the script
// runtime itself with its real Recorder: the tool_call line and the
// session's totals come from the same place.
func TestScriptRunWithHostInterfaces(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	rec := script.NewRecorder(e.tw, nil, e.sess.Started)
	comp, err := testEngine.Compile(componentBytes(t, "capsule_echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	res := script.Run(context.Background(), script.Config{
		Engine: testEngine, Component: comp, ComponentName: "capsule.wasm", Session: e.sess,
		Recorder: rec, Limits: e.m.Capabilities.EffLimits(), Lookup: os.LookupEnv,
		Imports: scriptImports{e.api},
	})
	if res.Ending != trace.EndOK {
		t.Fatalf("ending %s: %s", res.Ending, res.Reason)
	}
	if calls, errs := rec.Totals(); calls != 1 || errs != 0 {
		t.Fatalf("totals %d/%d", calls, errs)
	}
	ls := e.lines(t, trace.TypeToolCall)
	if len(ls) != 1 || ls[0].Str("tool_name") != "local/echo" || ls[0].Str("status") != "ok" {
		t.Fatalf("tool_call lines: %v", ls)
	}
}
