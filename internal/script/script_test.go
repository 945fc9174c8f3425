package script

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

func TestPickComponent(t *testing.T) {
	tests := []struct {
		names []string
		want  string
		code  string
	}{
		{[]string{"murmur.yaml", "x.wasm"}, "x.wasm", ""},
		{[]string{"a.wasm", "capsule.wasm", "b.wasm"}, "capsule.wasm", ""},
		{[]string{"a.wasm", "b.wasm"}, "", "E-RUN-004"},
		{[]string{"murmur.yaml", "sub/x.wasm"}, "", "E-RUN-003"},
		{nil, "", "E-RUN-003"},
	}
	for _, tc := range tests {
		got, err := PickComponent("cap", tc.names)
		if got != tc.want || diag.Code(err) != tc.code {
			t.Errorf("PickComponent(%v) = %q, %v; want %q, %s", tc.names, got, err, tc.want, tc.code)
		}
	}
}

func TestCheckComponent(t *testing.T) {
	tests := []struct {
		name string
		data string
		core bool
		ok   bool
	}{
		{"component", "\x00asm\x0d\x00\x01\x00rest", false, true},
		{"core module", "\x00asm\x01\x00\x00\x00", true, false},
		{"wat", ";; c\n(component)", false, true},
		{"text", "hello world", false, false},
		{"short", "\x00as", false, false},
		{"empty", "", false, false},
	}
	for _, tc := range tests {
		err := CheckComponent("x", []byte(tc.data))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil && (diag.Code(err) != "E-RUN-005" || tc.core != strings.Contains(err.Error(), "core")) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// runFixture runs a WAT fixture through Run with a real engine and session.
func runFixture(t *testing.T, eng *wasmhost.Engine, wat string, lim manifest.EffLimits) (Result, []trace.Line, string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", wat))
	if err != nil {
		t.Fatal(err)
	}
	return runSource(t, eng, wat, src, lim)
}

// runSource runs a component's source (WAT) through Run.
func runSource(t *testing.T, eng *wasmhost.Engine, wat string, src []byte, lim manifest.EffLimits) (Result, []trace.Line, string) {
	t.Helper()
	comp, err := eng.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	home := t.TempDir()
	s, err := session.New(session.Config{Home: home, Cwd: t.TempDir(), Name: "local/" + wat, Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tw, err := trace.Create(filepath.Join(s.RecordsDir, trace.FileName), s.ID, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := trace.NewRecorder(tw, nil, s.Started, nil)
	tw.Emit(trace.SessionStart{CapsuleName: s.Name, CapsuleVersion: s.Version, Kind: "script"})
	res := Run(context.Background(), Config{Engine: eng, Component: comp, ComponentName: "capsule.wasm",
		Session: s, Recorder: rec, Limits: lim, Lookup: os.LookupEnv})
	rec.End(res.Ending, res.Reason, true)
	if rec.End("ok", "", true) {
		t.Error("a second End wrote another session_end")
	}
	tw.Close()
	f, err := trace.ReadFile(filepath.Join(s.RecordsDir, trace.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return res, f.Lines, s.RecordsDir
}

func TestRunEndings(t *testing.T) {
	eng, err := wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	base := manifest.Capabilities{}.EffLimits()
	short := base
	short.DeadlineSeconds = 1
	small := base
	small.MemoryBytes = 16 << 20
	tests := []struct {
		wat    string
		lim    manifest.EffLimits
		ending string
	}{
		{"ok.wat", base, trace.EndOK},
		{"trap.wat", base, trace.EndTrapped},
		{"spin.wat", short, trace.EndDeadlineExceeded},
		{"grow.wat", small, trace.EndResourceLimit},
	}
	for _, tc := range tests {
		t.Run(tc.wat, func(t *testing.T) {
			res, lines, recs := runFixture(t, eng, tc.wat, tc.lim)
			if _, err := os.Stat(filepath.Join(recs, "logs", HTTPLog)); !os.IsNotExist(err) {
				t.Errorf("a run without requests left %s: %v", HTTPLog, err)
			}
			if res.Ending != tc.ending {
				t.Fatalf("ending %s (%s), want %s", res.Ending, res.Reason, tc.ending)
			}
			if (res.Ending == trace.EndOK) != (res.Reason == "") {
				t.Errorf("reason %q for %s", res.Reason, res.Ending)
			}
			last := lines[len(lines)-1]
			if last.EventType != trace.TypeSessionEnd || last.Str("exit_status") != tc.ending {
				t.Errorf("last line %v", last.Fields)
			}
			for _, l := range lines {
				if l.EventType == trace.TypeCallDeadline {
					t.Errorf("a spin in its own code is not a wait on the runtime: %v", l.Fields)
				}
			}
		})
	}
}

// A wasi:http request is answered HTTP-request-denied (the fixture's run
// returns only then) and logged to logs/http.log.
func TestRunDeniesHTTP(t *testing.T) {
	eng, err := wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	res, _, recs := runFixture(t, eng, "http_capsule.wat", manifest.Capabilities{}.EffLimits())
	if res.Ending != trace.EndOK {
		t.Fatalf("ending %s (%s): the request was not denied", res.Ending, res.Reason)
	}
	log, _ := os.ReadFile(filepath.Join(recs, "logs", HTTPLog))
	if !strings.Contains(string(log), "wasi:http request denied") || !strings.Contains(string(log), "https://blocked.example.com/secret?x=1") {
		t.Errorf("%s:\n%s", HTTPLog, log)
	}
}
