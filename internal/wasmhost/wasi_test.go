package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWASIEnvIsExactlyWhatWasGiven(t *testing.T) {
	t.Setenv("WASMHOST_HOST_SECRET", "must-not-leak")
	env := map[string]string{"MURMUR_SESSION_ID": "ses_1", "ALLOWED": "yes = really"}
	i := instantiate(t, "wasi.wat", RunConfig{WASI: WASI{Env: env, Args: []string{"prog", "a b"}}})
	v, err := i.Call(bg, "", "env")
	if err != nil {
		t.Fatal(err)
	}
	want := List{Tuple{"ALLOWED", "yes = really"}, Tuple{"MURMUR_SESSION_ID", "ses_1"}}
	if !Equal(v, want) {
		t.Fatalf("guest env %v, want %v", v, want)
	}
	v, err = i.Call(bg, "", "args")
	if err != nil || !Equal(v, List{"prog", "a b"}) {
		t.Fatalf("guest args %v, %v", v, err)
	}
	// Nothing given: nothing seen.
	j := instantiate(t, "wasi.wat", RunConfig{})
	if v, err := j.Call(bg, "", "env"); err != nil || len(v.(List)) != 0 {
		t.Fatalf("empty config: env %v, %v", v, err)
	}
}

func TestWASIInvalidEnv(t *testing.T) {
	for _, env := range []map[string]string{{"A=B": "x"}, {"": "x"}, {"A": "x\x00y"}, {"A\xff": "x"}, {"A": "x\xff"}} {
		_, err := instantiateFull(testEngine, bg, fixture(t, "wasi.wat"), RunConfig{WASI: WASI{Env: env}})
		if err == nil {
			t.Errorf("env %q accepted", env)
		}
	}
}

func TestWASIStdio(t *testing.T) {
	dir := t.TempDir()
	out, errp := filepath.Join(dir, "stdout.log"), filepath.Join(dir, "stderr.log")
	i := instantiate(t, "wasi.wat", RunConfig{WASI: WASI{StdoutPath: out, StderrPath: errp, Stdin: []byte("input bytes")}})
	if _, err := i.Call(bg, "", "say", "to stdout\n", "to stderr ✓\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "to stdout\n" {
		t.Errorf("stdout file %q", b)
	}
	if b, _ := os.ReadFile(errp); string(b) != "to stderr ✓\n" {
		t.Errorf("stderr file %q", b)
	}
	for _, p := range []string{out, errp} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: a guest's output must be owner-only: %v %v", p, st.Mode(), err)
		}
	}
	v, err := i.Call(bg, "", "stdin-read", uint64(100))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := v.(Bytes) // list<u8> lifts as Bytes
	if string(got) != "input bytes" {
		t.Errorf("stdin %q", got)
	}
	// Without paths stdio is discarded, not inherited.
	j := instantiate(t, "wasi.wat", RunConfig{})
	if _, err := j.Call(bg, "", "say", "lost\n", "lost\n"); err != nil {
		t.Fatal(err)
	}
}

// TestWASIStdioFiles: open files as stdout and stderr (a tool's logs,
// opened once per session): each instance writes through its own duplicate,
// so the output lands after what the file holds, and closing the caller's
// file leaves a live instance writing.
func TestWASIStdioFiles(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	out, errf := open("stdout.log"), open("stderr.log")
	defer errf.Close()
	for n, say := range []string{"first\n", "second\n"} {
		i := instantiate(t, "wasi.wat", RunConfig{WASI: WASI{Stdout: out, Stderr: errf}})
		if n == 1 {
			out.Close() // the instance holds its own descriptor
		}
		if _, err := i.Call(bg, "", "say", say, "err "+say); err != nil {
			t.Fatal(err)
		}
		i.Close()
	}
	for name, want := range map[string]string{"stdout.log": "first\nsecond\n", "stderr.log": "err first\nerr second\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	// A closed file cannot be handed over: a clear refusal, not a crash.
	_, err := instantiateFull(testEngine, bg, fixture(t, "wasi.wat"), RunConfig{WASI: WASI{Stdout: out}})
	if err == nil || !strings.Contains(err.Error(), "E-RUN-104") {
		t.Fatalf("a closed stdout file: %v", err)
	}
}

func TestWASIUnwritableStdout(t *testing.T) {
	_, err := instantiateFull(testEngine, bg, fixture(t, "wasi.wat"), RunConfig{WASI: WASI{StdoutPath: "/nonexistent/dir/out.log"}})
	if err == nil {
		t.Fatal("stdout in a missing directory accepted")
	}
}

func TestWASIPreopens(t *testing.T) {
	parent := t.TempDir()
	rw, ro := filepath.Join(parent, "rw"), filepath.Join(parent, "ro")
	for _, d := range []string{rw, ro} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ro, "task.md"), []byte("task"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(parent, filepath.Join(rw, "up")); err != nil {
		t.Fatal(err)
	}
	i := instantiate(t, "wasi.wat", RunConfig{WASI: WASI{Preopens: []Preopen{
		{HostDir: rw, GuestPath: "."},
		{HostDir: ro, GuestPath: "murmur-runtime", ReadOnly: true},
	}}})
	open := func(dir uint32, path string, create bool) uint32 {
		t.Helper()
		v, err := i.Call(bg, "", "open", dir, path, create)
		if err != nil {
			t.Fatal(err)
		}
		return v.(uint32)
	}
	if c := open(0, "new.txt", true); c != 0 {
		t.Errorf("create in the read-write preopen: code %d", c)
	}
	if _, err := os.Stat(filepath.Join(rw, "new.txt")); err != nil {
		t.Errorf("file not created on the host: %v", err)
	}
	if c := open(1, "task.md", false); c != 0 {
		t.Errorf("read in the read-only preopen: code %d", c)
	}
	if c := open(1, "evil.txt", true); c == 0 {
		t.Error("created a file in the read-only preopen")
	}
	for _, p := range []string{"../escape.txt", "/escape.txt", "up/escape.txt", "../ro/task.md"} {
		if c := open(0, p, true); c == 0 {
			t.Errorf("escape %q succeeded", p)
		}
	}
	for _, p := range []string{"escape.txt", "ro/evil.txt"} {
		if _, err := os.Stat(filepath.Join(parent, p)); err == nil {
			t.Errorf("%s appeared outside the preopen", p)
		}
	}
	if _, err := instantiateFull(testEngine, bg, fixture(t, "wasi.wat"), RunConfig{WASI: WASI{Preopens: []Preopen{{HostDir: filepath.Join(parent, "missing"), GuestPath: "."}}}}); err == nil {
		t.Error("a missing preopen directory was accepted")
	}
}

func TestWASIInvalidPaths(t *testing.T) {
	dir := t.TempDir()
	for _, w := range []WASI{
		{Preopens: []Preopen{{HostDir: dir + "\x00/etc", GuestPath: "."}}},
		{Preopens: []Preopen{{HostDir: dir, GuestPath: ""}}},
		{Preopens: []Preopen{{HostDir: "", GuestPath: "."}}},
		{StdoutPath: dir + "/out\x00x"},
		{Args: []string{"a\x00b"}},
		{Args: []string{"a\xffb"}},
		{Preopens: []Preopen{{HostDir: dir, GuestPath: "g\xff"}}},
		{Preopens: []Preopen{{HostDir: dir + "/h\xff", GuestPath: "."}}},
		{StdoutPath: dir + "/o\xff"},
	} {
		_, err := instantiateFull(testEngine, bg, fixture(t, "wasi.wat"), RunConfig{WASI: w})
		if err == nil || !strings.Contains(err.Error(), "E-RUN-104") {
			t.Errorf("%+v: %v", w, err)
		} else if strings.Contains(fmt.Sprint(w), "\xff") && !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%+v: %v does not say why", w, err)
		}
	}
}

// TestCallBlockedInWASIFile: opening a FIFO in a preopened directory blocks
// inside wasmtime's native WASI code, where neither the epoch nor a context
// reaches. The caller still gets a waiting DeadlineError shortly after
// deadline + grace; the store is freed once the native call comes back.
func TestCallBlockedInWASIFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	before := testEngine.live.Load()
	i, err := instantiateFull(testEngine, bg, fixture(t, "wasi.wat"), RunConfig{
		WASI:   WASI{Preopens: []Preopen{{HostDir: dir, GuestPath: "."}}},
		Limits: Limits{Deadline: 200 * time.Millisecond, Grace: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := i.Call(bg, "", "open", uint32(0), "fifo", false)
		ended <- err
	}()
	var callErr error
	select {
	case callErr = <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("a call blocked in a FIFO open held its caller past deadline + grace")
	}
	de := asDeadline(t, callErr)
	if !de.Waiting || de.Call != BlockedInWASI {
		t.Fatalf("got %+v", de)
	}
	if _, err := i.Call(bg, "", "open", uint32(0), "x", true); !errors.Is(err, ErrInstanceDead) {
		t.Fatalf("call on the abandoned instance: %v", err)
	}
	if err := i.Close(); err != nil {
		t.Fatal(err)
	}
	// Unblock the native open (a writer appears); then the store is freed.
	w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for give := time.Now().Add(30 * time.Second); testEngine.live.Load() != before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(give) {
			t.Fatalf("store not freed after the native call returned (%d live, want %d)", testEngine.live.Load(), before)
		}
	}
}

// TestCancelWhileBlockedInWASIFile: the caller's context ending while the
// guest is blocked in native WASI code ends the call with CancelledError
// after the grace, long before the deadline.
func TestCancelWhileBlockedInWASIFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	i := instantiate(t, "wasi.wat", RunConfig{
		WASI:   WASI{Preopens: []Preopen{{HostDir: dir, GuestPath: "."}}},
		Limits: Limits{Deadline: 10 * time.Minute, Grace: 200 * time.Millisecond},
	})
	ctx, cancel := context.WithCancel(bg)
	ended := make(chan error, 1)
	go func() {
		_, err := i.Call(ctx, "", "open", uint32(0), "fifo", false)
		ended <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-ended:
		var ce *CancelledError
		if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %T %v, want CancelledError(context.Canceled)", err, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled call blocked in a FIFO open held its caller")
	}
	if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
