package hooks

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

var bg = context.Background()

// testEngine is shared by the tests, as the runtime shares one per process.
var testEngine *wasmhost.Engine

func TestMain(m *testing.M) {
	var err error
	testEngine, err = wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := testEngine.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

var tmpl = template.Must(template.New("hook.wat.tmpl").Funcs(template.FuncMap{"b": func(string) string { return "" },
	"fs": func() bool { return false }}).
	ParseFiles("testdata/hook.wat.tmpl"))

// hookWAT renders the hook fixture: behaviour per event ("none" for the rest).
func hookWAT(t testing.TB, behaviour map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tt := template.Must(tmpl.Clone()).Funcs(template.FuncMap{"b": func(ev string) string {
		if b, ok := behaviour[ev]; ok {
			return b
		}
		return "none"
	}, "fs": func() bool {
		for _, b := range behaviour {
			if b == "read" {
				return true
			}
		}
		return false
	}})
	if err := tt.Execute(&buf, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// resolved makes a hook artifact as the store hands it over: a verified zip
// holding its murmur.yaml and its component.
func resolved(t testing.TB, name, manifestExtra string, wasm []byte) *store.Resolved {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	y := fmt.Sprintf("name: %s\nversion: 1.0.0\nruntime: hook\n%s", name, manifestExtra)
	for _, f := range []struct {
		name string
		data []byte
	}{{"murmur.yaml", []byte(y)}, {"hook.wasm", wasm}} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := store.OpenArchive(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return &store.Resolved{Name: name, Version: "1.0.0", Runtime: "hook", Archive: a}
}

// rec is the recorder: every line kept in order.
type rec struct {
	mu        sync.Mutex
	calls     []Call
	deadlines []string
	discard   bool
}

func (r *rec) HookCall(c Call) {
	r.mu.Lock()
	if !r.discard {
		r.calls = append(r.calls, c)
	}
	r.mu.Unlock()
}
func (r *rec) CallDeadline(component, call string, d time.Duration) {
	r.mu.Lock()
	r.deadlines = append(r.deadlines, fmt.Sprintf("%s %s %d", component, call, d.Milliseconds()))
	r.mu.Unlock()
}

type spec struct {
	name      string
	behaviour map[string]string
	binding   string // "" = none
	limits    *manifest.EffLimits
}

func defaultLimits() manifest.EffLimits { return manifest.Capabilities{}.EffLimits() }

// load loads hooks from specs under the default limits (or the spec's).
func load(t testing.TB, infer InferenceFunc, specs ...spec) (*Dispatcher, *rec, string) {
	t.Helper()
	r := &rec{}
	dir := t.TempDir()
	var hs []Hook
	for _, s := range specs {
		extra := ""
		if s.binding != "" {
			extra = "binding: " + s.binding + "\n"
		}
		l := defaultLimits()
		if s.limits != nil {
			l = *s.limits
		}
		hs = append(hs, Hook{Resolved: resolved(t, s.name, extra, hookWAT(t, s.behaviour)), Limits: l,
			Env: map[string]string{"MURMUR_SESSION_ID": "ses_1"}})
	}
	d, err := Load(bg, Config{Engine: testEngine, Hooks: hs, Recorder: r, RecordsDir: dir, Inference: infer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d, r, dir
}

func hex(v uint64) string { return fmt.Sprintf("%016x|", v) }

func s(v ...string) string { return strings.Join(v, "|") + "|" }

var _ = wit.HookOnStage
