package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegisterRejectsNil(t *testing.T) {
	for name, fn := range map[string]func(){
		"Capsule": func() { Capsule(nil) },
		"Tool":    func() { Tool(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), "nil run function") {
					t.Fatalf("recovered %v", v)
				}
			}()
			fn()
		})
	}
}

func TestRegisterKeepsFunction(t *testing.T) {
	defer func(c func() error, tl func(ToolInput) ToolResult) { capsuleFn, toolFn = c, tl }(capsuleFn, toolFn)
	Capsule(func() error { return nil })
	Tool(func(in ToolInput) ToolResult { return ToolResult{Data: in.Data} })
	if capsuleFn == nil || capsuleFn() != nil {
		t.Fatal("capsule not registered")
	}
	if got := toolFn(ToolInput{Data: Some("x")}); got.Data == nil || *got.Data != "x" {
		t.Fatal("tool not registered")
	}
}

// ReadTask reads murmur-runtime/task.md relative to the working directory, which
// in a component is the work folder.
func TestReadTask(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if _, err := ReadTask(); err == nil {
		t.Fatal("no task file, no error")
	}
	if err := os.MkdirAll(filepath.Join(dir, "murmur-runtime"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, TaskPath), []byte("do the thing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTask()
	if err != nil || got != "do the thing\n" {
		t.Fatalf("ReadTask = %q, %v", got, err)
	}
}

func TestWriteResult(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, text := range []string{"first\n", "second"} {
		if err := WriteResult(text); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "out", "result.txt"))
		if err != nil || string(b) != text {
			t.Fatalf("result %q, %v; want %q", b, err, text)
		}
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("out", nil, 0o600); err != nil { // a file where out/ should be
		t.Fatal(err)
	}
	if err := WriteResult("x"); err == nil {
		t.Fatal("no error with out/ blocked by a file")
	}
}
