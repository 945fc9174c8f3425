package hooks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// TestHookFilesystemGrant runs a hook that opens note.txt in its first
// preopen: without preopens (its entry declares no capabilities.filesystem)
// it cannot reach the work folder (the only folder it may see is the host's
// private wasi:http spool); with the work folder it reads the file; with a
// scope that does not hold the file it cannot open it.
func TestHookFilesystemGrant(t *testing.T) {
	work, runtime := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "note.txt"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	scope := filepath.Join(work, "sub")
	if err := os.Mkdir(scope, 0o700); err != nil {
		t.Fatal(err)
	}
	wasm := hookWAT(t, map[string]string{wit.HookOnSessionStart: "read"})
	cases := []struct {
		name     string
		preopens []wasmhost.Preopen
		status   string
		text     string // the artifact, or the error
	}{
		{"no filesystem grant", nil, StatusError, "no preopen"}, // it sees no directory at all
		{"work folder", grant.Preopens(work, runtime), StatusOK, "read"},
		{"scope without the file", grant.Preopens(scope, runtime), StatusError, "cannot open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &rec{}
			d, err := Load(bg, Config{Engine: testEngine, Recorder: r, Hooks: []Hook{{
				Resolved: resolved(t, "local/reader", "", wasm), Limits: defaultLimits(), Preopens: c.preopens}}})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			outs := d.OnSessionStart(bg, wit.SessionContext{CapsuleName: "local/a"})
			if len(r.calls) != 1 || r.calls[0].Status != c.status {
				t.Fatalf("calls %+v, want one with status %s", r.calls, c.status)
			}
			switch c.status {
			case StatusOK:
				if len(outs) != 1 || outs[0].Text != c.text {
					t.Errorf("outputs %+v, want artifact %q", outs, c.text)
				}
			default:
				if e := r.calls[0].Error; e == nil || *e != c.text {
					t.Errorf("error %q, want %q", deref(e), c.text)
				}
			}
		})
	}
}
