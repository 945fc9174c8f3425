package wit

import (
	"strings"

	"github.com/murmur-go/murmur/internal/wasmhost"

	"context"
	"errors"
	"testing"
)

func TestCallToolRun(t *testing.T) {
	i := instantiate(t, "echo_tool.wat", nil)
	data, lp := "hello ✓", "logs/x.log"
	for range 3 { // the same instance serves repeated calls
		r, err := CallToolRun(bg, i, ToolInput{Data: &data, LogPath: &lp})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != StatusPassed || r.Summary == nil || *r.Summary != "ok" || r.Data == nil || *r.Data != data ||
			r.DataPath != nil || r.Truncated || len(r.Metadata) != 1 || r.Metadata[0] != [2]string{"echo", "1"} {
			t.Fatalf("result %+v", r)
		}
	}
	r, err := CallToolRun(bg, i, ToolInput{})
	if err != nil || r.Data != nil {
		t.Fatalf("no input: %+v, %v", r, err)
	}
	bad := "\xff"
	if _, err := CallToolRun(bg, i, ToolInput{Data: &bad}); err == nil {
		t.Fatal("invalid UTF-8 input crossed into the guest")
	}
}

type fakeManager struct{ fail error }

func (m fakeManager) List(context.Context) ([]ArtifactSummary, error) {
	return []ArtifactSummary{{"acme/echo", "1.0.0", "wasm"}}, m.fail
}
func (m fakeManager) Describe(_ context.Context, name string) (ArtifactInfo, error) {
	s := `{"type":"object"}`
	return ArtifactInfo{Name: name, Version: "1.0.0", Description: "d", Tags: []string{"a", "b"}, Runtime: "native", InputSchema: &s}, m.fail
}
func (m fakeManager) Search(context.Context, string) ([]ArtifactSummary, error) { return nil, m.fail }
func (m fakeManager) Pull(_ context.Context, n, v string) (ArtifactSummary, error) {
	return ArtifactSummary{n, v, "wasm"}, m.fail
}
func (m fakeManager) Remove(context.Context, string) (bool, error) { return true, m.fail }
func (m fakeManager) Diagnostics(context.Context) (RuntimeState, error) {
	return RuntimeState{CapsuleID: "c", Installed: []ArtifactSummary{{"x", "1", "wasm"}}, Capabilities: "{}"}, m.fail
}

// TestTypedHelpersShapes calls every typed helper's host function the way the
// dispatcher does and checks each answer against its WIT type (wit/).
func TestTypedHelpersShapes(t *testing.T) {
	resultOf := func(ok *wasmhost.Type) *wasmhost.Type { return tResult(ok, tString) }
	want := map[string]*wasmhost.Type{
		IfaceToolRegistry + "#invoke":            resultOf(tToolResult),
		IfaceArtifactManager + "#list":           tList(tArtifactSummary),
		IfaceArtifactManager + "#describe":       resultOf(tArtifactInfo),
		IfaceArtifactManager + "#search":         resultOf(tList(tArtifactSummary)),
		IfaceArtifactManager + "#pull":           resultOf(tArtifactSummary),
		IfaceArtifactManager + "#remove":         resultOf(tBool),
		IfaceArtifactManager + "#diagnostics":    resultOf(tRuntimeState),
		IfaceMessageSend + "#send":               resultOf(tTaskResult),
		IfaceTask + "#request-input":             tString,
		IfaceTextChunks + "#emit-chunk":          nil,
		IfaceTextChunks + "#emit-thinking-chunk": nil,
	}
	args := map[string][]wasmhost.Value{
		"invoke":        {"echo", ToolInput{}.Value()},
		"describe":      {"acme/echo"},
		"search":        {"q"},
		"pull":          {"acme/echo", "1.0.0"},
		"remove":        {"acme/echo"},
		"send":          {"http://127.0.0.1:1", Message{MessageID: "m1", Text: "hi"}.Value()},
		"request-input": {"prompt?"},
		"emit-chunk":    {"a"}, "emit-thinking-chunk": {"b"},
	}
	for _, fail := range []error{nil, errors.New("nope"), fatal(errors.New("fatal"))} {
		var chunks []string
		h := definer{}
		GrantToolRegistry(h, func(ctx context.Context, name string, in ToolInput) (ToolResult, error) {
			return ToolResult{Status: StatusFailed, Metadata: [][2]string{{"k", "v"}}}, fail
		})
		GrantArtifactManager(h, fakeManager{fail})
		GrantMessageSend(h, func(ctx context.Context, peer string, m Message) (TaskResult, error) {
			return TaskResult{TaskID: "t", ContextID: "c", State: "TASK_STATE_COMPLETED"}, fail
		})
		GrantTask(h, func(ctx context.Context, p string) (string, error) { return "answer to " + p, fail })
		GrantTextChunks(h, func(ctx context.Context, s string, thinking bool) error {
			chunks = append(chunks, s)
			return fail
		})
		if len(h) != len(want) {
			t.Fatalf("%d functions registered, want %d", len(h), len(want))
		}
		for key, f := range h {
			fn := key[len(key)-len(funcName(key)):]
			res, err := f(bg, args[fn])
			ty := want[key]
			var fe *fatalError
			switch {
			case fail == nil && err != nil:
				t.Errorf("%s: %v", key, err)
			case errors.As(fail, &fe) && err == nil:
				t.Errorf("%s: a Fatal error did not trap", key)
			case err != nil:
				// Functions without an error side trap on any error.
				if ty != nil && ty.Kind == wasmhost.KindResult && fe == nil {
					t.Errorf("%s: plain error trapped instead of err(...)", key)
				}
			case ty == nil:
				if res != nil {
					t.Errorf("%s: returned %v", key, res)
				}
			default:
				if cerr := wasmhost.Check(res, ty); cerr != nil {
					t.Errorf("%s (fail=%v): %v\n%#v", key, fail, cerr, res)
				}
				if fail != nil && ty.Kind == wasmhost.KindResult && !res.(wasmhost.Result).IsErr {
					t.Errorf("%s: error answered ok", key)
				}
			}
		}
		if len(chunks) != 2 {
			t.Errorf("chunks %v", chunks)
		}
	}
}

func funcName(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '#' {
			return key[i+1:]
		}
	}
	return key
}

func TestDecodeToolResultRejectsWrongShapes(t *testing.T) {
	for _, v := range []wasmhost.Value{nil, "x", wasmhost.Record{}, wasmhost.Record{{Name: "a", Value: 1}}} {
		if _, err := DecodeToolResult(v); err == nil {
			t.Errorf("%#v decoded", v)
		}
	}
	r := ToolResult{Status: StatusError, Truncated: true, Metadata: [][2]string{{"a", "b"}}}
	back, err := DecodeToolResult(r.Value())
	if err != nil || back.Status != StatusError || !back.Truncated || back.Metadata[0] != [2]string{"a", "b"} {
		t.Fatalf("round trip %+v, %v", back, err)
	}
}

type recordingManager struct {
	fakeManager
	pulled [][2]string
}

func (m *recordingManager) Pull(_ context.Context, n, v string) (ArtifactSummary, error) {
	m.pulled = append(m.pulled, [2]string{n, v})
	if n == "missing" {
		return ArtifactSummary{}, errors.New("artifact missing@" + v + " is in no store")
	}
	return ArtifactSummary{n, v, "native"}, nil
}

func TestArtifactManagerAndMessageThroughGuest(t *testing.T) {
	m := &recordingManager{}
	var sent []Message
	h := wasmhost.NewHost()
	GrantArtifactManager(h, m)
	GrantMessageSend(h, func(ctx context.Context, peer string, msg Message) (TaskResult, error) {
		sent = append(sent, msg)
		if peer != "http://127.0.0.1:7701" {
			return TaskResult{}, errors.New("peer not in the formation: " + peer)
		}
		return TaskResult{TaskID: "task-1", ContextID: "ctx-9", State: "TASK_STATE_COMPLETED"}, nil
	})
	i := instantiate(t, "manage.wat", h)

	v, err := i.Call(bg, "", "list-back")
	want := wasmhost.List{wasmhost.Record{{Name: "name", Value: "acme/echo"}, {Name: "version", Value: "1.0.0"}, {Name: "runtime", Value: wasmhost.Enum("wasm")}}}
	if err != nil || !wasmhost.Equal(v, want) {
		t.Fatalf("list-back = %#v, %v", v, err)
	}
	v, err = i.Call(bg, "", "pull-back", "acme/tool", "2.1.0")
	if err != nil || !wasmhost.Equal(v, wasmhost.Ok(wasmhost.Record{{Name: "name", Value: "acme/tool"}, {Name: "version", Value: "2.1.0"}, {Name: "runtime", Value: wasmhost.Enum("native")}})) {
		t.Fatalf("pull-back = %#v, %v", v, err)
	}
	v, err = i.Call(bg, "", "pull-back", "missing", "9")
	if err != nil || !wasmhost.Equal(v, wasmhost.Err("artifact missing@9 is in no store")) {
		t.Fatalf("pull-back missing = %#v, %v", v, err)
	}
	ctxID := "ctx-9"
	msg := Message{MessageID: "m-1", ContextID: &ctxID, Text: "hello ✓"}
	v, err = i.Call(bg, "", "send-back", "http://127.0.0.1:7701", msg.Value())
	if err != nil || !wasmhost.Equal(v, wasmhost.Ok(TaskResult{"task-1", "ctx-9", "TASK_STATE_COMPLETED"}.Value())) {
		t.Fatalf("send-back = %#v, %v", v, err)
	}
	v, err = i.Call(bg, "", "send-back", "http://elsewhere", Message{MessageID: "m-2", Text: "x"}.Value())
	if err != nil || !wasmhost.Equal(v, wasmhost.Err("peer not in the formation: http://elsewhere")) {
		t.Fatalf("send-back refused = %#v, %v", v, err)
	}
	if len(sent) != 2 || sent[0].Text != "hello ✓" || sent[0].ContextID == nil || *sent[0].ContextID != "ctx-9" || sent[1].ContextID != nil {
		t.Fatalf("host saw %+v", sent)
	}
	if len(m.pulled) != 2 {
		t.Fatalf("pulled %v", m.pulled)
	}
}

// definer records what the helpers define, so each function can be called
// the way the engine's dispatcher calls it.
type definer map[string]wasmhost.HostFunc

func (d definer) Define(iface, fn string, f wasmhost.HostFunc) { d[iface+"#"+fn] = f }

// TestFatalTrapsThroughGuest: capsule.wat calls invoke once; a plain error is
// answered err(...) (the guest then traps on its own unreachable), a fatal
// one stops the guest with the host's error.
func TestFatalTrapsThroughGuest(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		want    string
		hostErr bool
	}{
		{"plain error is answered", errors.New("no such tool"), "unreachable", false},
		{"fatal error traps", fatal(errors.New("fatal tool error")), "fatal tool error", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := wasmhost.NewHost()
			GrantToolRegistry(h, func(context.Context, string, ToolInput) (ToolResult, error) { return ToolResult{}, c.err })
			te := asTrap(t, CallCapsuleRun(bg, instantiate(t, "capsule.wat", h)))
			if !strings.Contains(te.Message, c.want) || (te.Err != nil) != c.hostErr {
				t.Fatalf("trap %+v, want %q", te, c.want)
			}
		})
	}
}

func TestExportsRun(t *testing.T) {
	for _, c := range []struct {
		fixture       string
		capsule, tool bool
	}{
		{"capsule.wat", true, false},
		{"echo_tool.wat", false, true},
		{"basic.wat", true, false},
		{"values.wat", false, false},
		{"http.wat", false, false},
	} {
		comp := fixture(t, c.fixture)
		if got := ExportsCapsuleRun(comp); got != c.capsule {
			t.Errorf("%s: ExportsCapsuleRun = %v", c.fixture, got)
		}
		if got := ExportsToolRun(comp); got != c.tool {
			t.Errorf("%s: ExportsToolRun = %v", c.fixture, got)
		}
	}
}

// TestRecordTypesMatchComponent: the record types the tests check against
// are those a real tool component exports.
func TestRecordTypesMatchComponent(t *testing.T) {
	exp := fixture(t, "echo_tool.wat").Exports()
	if len(exp) != 1 || exp[0].Name != IfaceToolRun {
		t.Fatalf("exports %v", exp)
	}
	for _, m := range exp[0].Exports {
		if m.Name != RunFunc {
			continue
		}
		if m.Func.Params[0].Type.String() != tToolInput.String() || m.Func.Result.String() != tToolResult.String() {
			t.Fatalf("run: %s", m.Func)
		}
		return
	}
	t.Fatal("no run function")
}
