package wit

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// DecodeDecision reads only result<decision, string>: anything else is an
// answer the runtime cannot read, which the gate treats as a denial.
func TestDecodeDecision(t *testing.T) {
	tests := []struct {
		name string
		v    wasmhost.Value
		want Decision
		err  string // "hook" for a *HookError, else a part of the unreadable reason
	}{
		{"allow", wasmhost.Ok(wasmhost.Variant{Case: "allow"}), Decision{}, ""},
		{"deny", wasmhost.Ok(wasmhost.Variant{Case: "deny", Value: "no"}), Decision{Deny: true, Reason: "no"}, ""},
		{"err", wasmhost.Err("broke"), Decision{}, "hook"},
		{"not a result", "allow", Decision{}, "want result<decision, string>"},
		{"a granting case", wasmhost.Ok(wasmhost.Variant{Case: "grant"}), Decision{}, `unknown case "grant"`},
		{"deny without a string", wasmhost.Ok(wasmhost.Variant{Case: "deny", Value: uint32(1)}), Decision{}, "deny: want string"},
		{"allow with a payload", wasmhost.Ok(wasmhost.Variant{Case: "allow", Value: "x"}), Decision{}, "allow carries a payload"},
		{"not a variant", wasmhost.Ok("allow"), Decision{}, "want variant"},
		{"err not a string", wasmhost.Err(uint32(3)), Decision{}, "err: want string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DecodeDecision(tc.v)
			var he *HookError
			switch {
			case tc.err == "":
				if err != nil || d != tc.want {
					t.Errorf("%+v, %v", d, err)
				}
			case tc.err == "hook":
				if !errors.As(err, &he) || he.Message != "broke" {
					t.Errorf("%v", err)
				}
			default:
				if !IsUnreadable(err) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%v, want unreadable %q", err, tc.err)
				}
			}
		})
	}
}

// HookExports: a policy hook (the Go-kit policy-probe) exports the gate and
// no lifecycle; a lifecycle hook (examples/hook-log) the lifecycle and no
// gate; a component of neither is E-RUN-096, widened to name both.
func TestHookExports(t *testing.T) {
	load := func(path string) *wasmhost.Component {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := testEngine.Compile(b)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	probe := load("../../testdata/components/policy-probe/policy-probe.wasm")
	if _, err := ExportsHookLifecycle(probe, "local/probe"); err == nil || !strings.Contains(err.Error(), "does not export murmur:hook/lifecycle@0.5.0") {
		t.Errorf("ExportsHookLifecycle of a policy-only hook: %v", err)
	}
	l, g, err := HookExports(probe, "local/probe")
	if err != nil || l != "" || g != IfacePolicyGate {
		t.Errorf("policy-probe: %q %q %v", l, g, err)
	}
	l, g, err = HookExports(load("../../examples/hook-log/hook-log.wasm"), "local/hook-log")
	if err != nil || l != IfaceHookLifecycle || g != "" {
		t.Errorf("hook-log: %q %q %v", l, g, err)
	}
	_, _, err = HookExports(load("../../testdata/components/tool-echo/tool-echo.wasm"), "acme/echo")
	var d *diag.Diagnostic
	if !errors.As(err, &d) || d.Code != "E-RUN-096" || !strings.Contains(d.Message, "it must export murmur:hook/lifecycle@0.5.0 (the hook world, murmur:runtime/hook@0.2.0) or murmur:policy/gate@0.1.0") ||
		!strings.HasSuffix(d.Message, "it exports neither") {
		t.Errorf("tool-echo: %v", err)
	}
}
