package wasmhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFixturesCompile compiles every WAT fixture: a typo in one fails here
// with wasmtime's message rather than deep inside another test.
func TestFixturesCompile(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.wat")
	if len(files) == 0 {
		t.Fatal("no WAT fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := testEngine.Compile(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range c.Imports() {
				t.Logf("import %s", it)
			}
			c.Close()
		})
	}
}

func TestIntrospection(t *testing.T) {
	c := fixture(t, "capsule.wat")
	var got []string
	for _, it := range c.Imports() {
		got = append(got, it.Name+" "+string(it.Kind))
	}
	want := []string{
		"wasi:random/random@0.2.12 instance", "wasi:cli/environment@0.2.9 instance",
		"murmur:tool/run@0.1.0 instance", "murmur:tool-registry/invoke@0.1.0 instance",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("imports %v, want %v", got, want)
	}
	inv := c.Imports()[3].WIT()
	for _, line := range []string{
		"murmur:tool-registry/invoke@0.1.0: instance {",
		"  invoke: func(name: string, input: tool-input) -> result<tool-result, string>",
		"  type status = enum { passed, failed, error }",
		"  type tool-result = record { status: status, summary: option<string>, data: option<string>, data-path: option<string>, truncated: bool, metadata: list<tuple<string, string>> }",
	} {
		if !strings.Contains(inv, line+"\n") {
			t.Errorf("invoke import lacks %q:\n%s", line, inv)
		}
	}
	if s := c.Imports()[3].String(); !strings.Contains(s, "invoke: func(name: string, input: record { data: option<string>, log-path: option<string> }) -> result<record { status: enum { passed, failed, error }, ") {
		t.Errorf("String is not structural:\n%s", s)
	}
	exp := fixture(t, "echo_tool.wat").Exports()
	if len(exp) != 1 || exp[0].Name != toolRun {
		t.Fatalf("exports %v", exp)
	}
	run := exp[0].Exports[3]
	if run.Name != "run" || run.Func.String() != "func(input: record { data: option<string>, log-path: option<string> }) -> record { status: enum { passed, failed, error }, summary: option<string>, data: option<string>, data-path: option<string>, truncated: bool, metadata: list<tuple<string, string>> }" {
		t.Fatalf("run: %s", run.Func)
	}
	res := fixture(t, "sleep.wat").Imports()[1].Exports[1].Func.Result
	if res.Kind != KindOwn || res.Resource != "pollable" {
		t.Fatalf("subscribe-duration result %s", res)
	}
}
