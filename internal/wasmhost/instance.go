package wasmhost

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/cgo"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/murmur-go/murmur/internal/diag"
)

// lateStop: an epoch stop this long after the deadline means the guest was
// blocked in the runtime when the deadline passed (while running its own code
// it is stopped within one tick).
const lateStop = 500 * time.Millisecond

// Limits bound one run. Every field is required and must be positive: the
// engine has no defaults of its own (Murmur's live in internal/manifest and
// reach it through internal/sandbox), and a zero is never read as
// "unlimited". Instantiate refuses Limits with a field <= 0.
type Limits struct {
	// MemoryBytes bounds the total of all linear memories of the run.
	MemoryBytes int64
	// TableElements bounds each table.
	TableElements int64
	// Instances bounds the core and component instances of the run.
	Instances int64
	// Memories and Tables bound how many of each the run may create.
	Memories int64
	Tables   int64
	// Deadline bounds each call (instantiation included) in wall-clock time.
	Deadline time.Duration
	// Grace is how long past the deadline a call waiting on the runtime (a
	// clock wait, a Go host function) is allowed before it is stopped.
	Grace time.Duration
}

// check refuses a missing (zero) or negative limit, naming it.
func (l Limits) check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MemoryBytes", l.MemoryBytes}, {"TableElements", l.TableElements}, {"Instances", l.Instances},
		{"Memories", l.Memories}, {"Tables", l.Tables},
		{"Deadline", int64(l.Deadline)}, {"Grace", int64(l.Grace)},
	} {
		if f.v <= 0 {
			return fmt.Errorf("wasmhost: Limits.%s is %d: every limit must be given and positive", f.name, f.v)
		}
	}
	return nil
}

// Preopen maps a host directory into the guest's filesystem.
type Preopen struct {
	HostDir   string
	GuestPath string
	ReadOnly  bool
	// ForStreams marks the directory a provider's Run.FileStream opens
	// files in (wasi:http's spool): it must be the last preopen, and it is
	// set up even when the component imports no wasi:filesystem.
	ForStreams bool
}

// WASI configures a run's WASI 0.2 context. It is always set up (a component
// touching WASI without one would abort the process); nothing is inherited
// from the host process: no environment, no arguments, no stdio.
type WASI struct {
	Args       []string
	Env        map[string]string
	Stdin      []byte
	StdoutPath string // "" = discard
	StderrPath string // "" = discard
	// Stdout and Stderr, when set, take the place of StdoutPath and
	// StderrPath: the guest's output is written to the open file (at its
	// offset, or appended with O_APPEND), through the engine's own
	// duplicate of its descriptor, so the caller may close the file once
	// Instantiate has returned. A caller running many instances with one
	// log opens it once instead of by path on every instantiation.
	Stdout, Stderr *os.File
	Preopens       []Preopen
}

// RunConfig configures one run (one store, one instance).
type RunConfig struct {
	Limits Limits
	WASI   WASI
	Host   *Host
	// ResultSpill receives, in order, the elements of a list in a tool
	// run's result past MaxResultListBytes (resultabi.go); the result
	// keeps the elements before them. Nil: they are dropped.
	ResultSpill func(Value)
	// GoIO makes Go answer the run's wasi:io instead of wasip2 (the
	// provider registered as ProviderGoIO: internal/wasmhost/wasiio, which
	// must be imported): wasi:http response bodies are then Go streams read
	// from the socket as they arrive (live), not files of the run's spool; the
	// run has no filesystem (WASI.Preopens must be empty), and stdin,
	// stdout and stderr are WASI's as for any run. The caller decides
	// (Murmur's rule is internal/wit.ChooseIO).
	GoIO bool
}

// Instance is one instantiated component in its own store. Calls are
// serialized. After a call ends with an error the instance is dead (wasmtime
// poisons it); Close it and make a new one.
type Instance struct {
	eng  *Engine
	comp *Component
	run  *run

	mu     sync.Mutex
	store  *C.wasmtime_store_t
	cctx   *C.wasmtime_context_t
	inst   C.wasmtime_component_instance_t
	dead   error
	closed bool
	// stuck is the result channel of a call abandoned while blocked in
	// native code: the store is freed only after it delivers.
	stuck chan callOut
}

// run is the Go side of a store: what host callbacks need, and what the
// ending classification reads.
type run struct {
	spill  func(Value) // RunConfig.ResultSpill
	c      *C.wh_run
	h      cgo.Handle
	eng    *Engine
	cctx   *C.wasmtime_context_t
	host   *Host
	limits Limits

	// per call
	parentCtx    context.Context    // the caller's
	callCtx      context.Context    // what host functions get; made on first use (ctx)
	callCancel   context.CancelFunc // callCtx's
	peak         int64              // MemoryPeak once the store is gone (or abandoned)
	deadline     time.Time
	inHost       atomic.Pointer[string] // the Go host function running, read by the watchdog
	waitedCall   string                 // a call the guest waited on past the deadline
	deadlineStop bool                   // a host call ended past the deadline
	hostErr      error

	resources []*Resource
	helper    *helperInst
	spool     *spoolHelper
	// goIO: the run's wasi:io is the provider's (RunConfig.GoIO).
	goIO bool
	// provs: the providers the run has (provider.go), in the order opened.
	provs []*provSlot

	objs    map[uint32]any // host-defined resources of this run, by rep
	nextRep uint32
}

// Resource is a handle to a component resource (own or borrow) that came from
// a guest or from the runtime. It is valid until its Instance is closed.
type Resource struct {
	p   *C.wasmtime_component_resource_any_t
	run *run
}

func (r *Resource) closed() bool { return r == nil || r.p == nil }

func (r *run) adoptResource(p *C.wasmtime_component_resource_any_t) *Resource {
	res := &Resource{p: p, run: r}
	r.resources = append(r.resources, res)
	return res
}

// Instantiate creates a store with the run's limits and WASI context, links
// the component (host functions from rc.Host; anything else it imports is
// linked to a "capability not granted" error) and instantiates it, bounded by
// the deadline.
func (e *Engine) Instantiate(ctx context.Context, c *Component, rc RunConfig) (*Instance, error) {
	if err := rc.Limits.check(); err != nil {
		return nil, err
	}
	if err := e.enter(); err != nil { // left by Instance.Close
		return nil, err
	}
	// The instance holds the component until it is closed (Component.Close
	// under a live instance would otherwise free what the store uses).
	if err := c.acquire(); err != nil {
		e.leave()
		return nil, err
	}
	l, err := c.linkerFor(rc.GoIO)
	if err != nil {
		c.release()
		e.leave()
		return nil, diag.Wrap(err, "E-RUN-101", "cannot link component").
			WithHint("the component imports something this runtime cannot provide; check its imports")
	}
	lim := rc.Limits
	r := &run{eng: e, host: rc.Host, limits: lim, spill: rc.ResultSpill}
	r.c = C.wh_run_new()
	r.c.mem_limit = C.int64_t(lim.MemoryBytes)
	r.c.late_ns = C.int64_t(lateStop)
	r.h = cgo.NewHandle(r)
	r.c.gohandle = C.uintptr_t(r.h)

	i := &Instance{eng: e, comp: c, run: r}
	i.store = C.wasmtime_store_new(e.e, unsafe.Pointer(r.c), nil)
	C.wasmtime_store_limiter(i.store, -1, C.int64_t(lim.TableElements), C.int64_t(lim.Instances),
		C.int64_t(lim.Tables), C.int64_t(lim.Memories))
	C.wh_store_setup(i.store, r.c)
	i.cctx = C.wasmtime_store_context(i.store)
	r.cctx = i.cctx

	wasi, err := r.providersOpen(c, rc)
	if err != nil {
		i.Close()
		return nil, err
	}
	reach := wasiReach{fs: c.importsFS || forStreams(wasi.Preopens), stdout: c.importsStdout, stderr: c.importsStderr}
	if err := setWASI(i.cctx, wasi, reach); err != nil {
		i.Close()
		return nil, err
	}

	// Start functions (a Go guest's package init) may block in native WASI
	// code too: the same watchdog as Call.
	o, finished := i.watched(ctx, func(done func()) callOut {
		cerr := C.wh_instantiate(l, i.cctx, c.c, &i.inst, r.c)
		done()
		if cerr != nil {
			return callOut{err: r.ending(ctx, cerr, true)}
		}
		return callOut{err: r.lateReturn()}
	})
	if !finished {
		i.Close() // frees the store once the native code returns
		return nil, o.err
	}
	if o.err != nil {
		i.Close()
		return nil, o.err
	}
	return i, nil
}

// forStreams reports whether a preopen is a provider's stream directory.
func forStreams(ps []Preopen) bool {
	for _, p := range ps {
		if p.ForStreams {
			return true
		}
	}
	return false
}

// wasiReach says which parts of a WASI context the component can reach: a
// preopen it cannot open a file through, or an output stream it cannot
// get, is not set up (WASI.Stdout and WASI.Stderr; StdoutPath and
// StderrPath are always created, since their callers may read them). Every
// preopen and path is still checked.
type wasiReach struct{ fs, stdout, stderr bool }

func setWASI(cctx *C.wasmtime_context_t, w WASI, reach wasiReach) error {
	wc := C.wasi_config_new()
	var frees []unsafe.Pointer
	defer func() {
		for _, p := range frees {
			C.free(p)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		frees = append(frees, unsafe.Pointer(p))
		return p
	}
	cArray := func(n int) **C.char {
		if n == 0 {
			return nil
		}
		// Zeroed: the stores below are Go pointer-typed, so the GC write
		// barrier reads (and would shade) whatever malloc left in the slots.
		p := C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(uintptr(0))))
		frees = append(frees, p)
		return (**C.char)(p)
	}
	fail := func(d *diag.Diagnostic) error {
		C.wasi_config_delete(wc)
		return d
	}
	for _, a := range w.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fail(diag.New("E-RUN-104", "WASI argument contains a NUL byte"))
		}
		if !utf8.ValidString(a) {
			return fail(diag.New("E-RUN-104", "WASI argument %q is not valid UTF-8", a).
				WithHint("WASI 0.2 arguments are strings: pass UTF-8 text"))
		}
	}
	paths := []string{w.StdoutPath, w.StderrPath}
	for _, p := range w.Preopens {
		paths = append(paths, p.HostDir, p.GuestPath)
		if p.HostDir == "" || p.GuestPath == "" {
			return fail(diag.New("E-RUN-104", "a preopen needs both a host directory and a guest path (got %q -> %q)", p.HostDir, p.GuestPath))
		}
	}
	for _, p := range paths {
		if strings.IndexByte(p, 0) >= 0 {
			// C strings would silently cut the path at the NUL.
			return fail(diag.New("E-RUN-104", "WASI path %q contains a NUL byte", p))
		}
		if !utf8.ValidString(p) {
			// wasmtime's C API takes paths as UTF-8 strings.
			return fail(diag.New("E-RUN-104", "WASI path %q is not valid UTF-8", p).
				WithHint("use a directory or file whose path is UTF-8"))
		}
	}
	argv := cArray(len(w.Args))
	for j, a := range w.Args {
		unsafe.Slice(argv, len(w.Args))[j] = cstr(a)
	}
	if !C.wh_set_argv(wc, C.size_t(len(w.Args)), argv) {
		return fail(diag.New("E-RUN-104", "cannot set the guest's arguments"))
	}
	keys := make([]string, 0, len(w.Env))
	for k, v := range w.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fail(diag.New("E-RUN-104", "invalid environment variable %q for the guest", k).
				WithHint("names must be non-empty without '=' or NUL; values without NUL; both UTF-8"))
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	names, values := cArray(len(keys)), cArray(len(keys))
	for j, k := range keys {
		unsafe.Slice(names, len(keys))[j] = cstr(k)
		unsafe.Slice(values, len(keys))[j] = cstr(w.Env[k])
	}
	if !C.wh_set_env(wc, C.size_t(len(keys)), names, values) {
		return fail(diag.New("E-RUN-104", "cannot set the guest's environment"))
	}
	var stdin *C.uint8_t
	if len(w.Stdin) > 0 {
		stdin = (*C.uint8_t)(unsafe.Pointer(&w.Stdin[0]))
	}
	C.wh_set_stdin(wc, stdin, C.size_t(len(w.Stdin)))
	for _, o := range []struct {
		which int
		name  string
		f     *os.File
		path  string
		reach bool
	}{{1, "stdout", w.Stdout, w.StdoutPath, reach.stdout}, {2, "stderr", w.Stderr, w.StderrPath, reach.stderr}} {
		switch {
		case o.f != nil && !o.reach:
			// Nothing to write with: discarded, as it would be.
		case o.f != nil:
			if err := setOutputFile(wc, o.which, o.f); err != nil {
				return fail(diag.Wrap(err, "E-RUN-104", "cannot use %s for the guest's %s", o.f.Name(), o.name).
					WithHint("pass a file open for writing"))
			}
		case o.path != "":
			// wasmtime creates the output file with a world-readable mode;
			// creating it first keeps a guest's output owner-only.
			if f, err := os.OpenFile(o.path, os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
				f.Close()
			}
			ok := false
			if o.which == 1 {
				ok = bool(C.wasi_config_set_stdout_file(wc, cstr(o.path)))
			} else {
				ok = bool(C.wasi_config_set_stderr_file(wc, cstr(o.path)))
			}
			if !ok {
				return fail(diag.New("E-RUN-104", "cannot open %s for the guest's %s", o.path, o.name).
					WithHint("check that its directory exists and is writable"))
			}
		}
	}
	for _, p := range w.Preopens {
		if !reach.fs {
			break
		}
		perms := C.wasi_dir_perms(C.WASMTIME_WASI_DIR_PERMS_READ | C.WASMTIME_WASI_DIR_PERMS_WRITE)
		fperms := C.wasi_file_perms(C.WASMTIME_WASI_FILE_PERMS_READ | C.WASMTIME_WASI_FILE_PERMS_WRITE)
		if p.ReadOnly {
			perms = C.WASMTIME_WASI_DIR_PERMS_READ
			fperms = C.WASMTIME_WASI_FILE_PERMS_READ
		}
		if !C.wasi_config_preopen_dir(wc, cstr(p.HostDir), cstr(p.GuestPath), perms, fperms) {
			return fail(diag.New("E-RUN-104", "cannot preopen %s as %q for the guest", p.HostDir, p.GuestPath).
				WithHint("check that the directory exists and is readable"))
		}
	}
	if err := C.wasmtime_context_set_wasi(cctx, wc); err != nil { // takes wc
		return diag.New("E-RUN-104", "cannot configure WASI: %s", errorText(err))
	}
	return nil
}

// setOutputFile makes f the guest's stdout (which = 1) or stderr (2),
// through a duplicate of its descriptor taken while f cannot be closed.
func setOutputFile(wc *C.wasi_config_t, which int, f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	ok := false
	if err := rc.Control(func(fd uintptr) {
		ok = bool(C.wh_set_output_fd(wc, C.int(which), C.int(fd)))
	}); err != nil {
		return err
	}
	if !ok {
		return errors.New("cannot duplicate its descriptor")
	}
	return nil
}

// beginCall arms the deadline and the caller's cancellation for one call;
// the returned func disarms them.
func (r *run) beginCall(ctx context.Context) func() {
	r.eng.callStarted()
	now := time.Now()
	r.deadline = now.Add(r.limits.Deadline)
	r.waitedCall, r.deadlineStop, r.hostErr = "", false, nil
	r.inHost.Store(nil)
	C.wh_run_arm(r.c, C.wh_now()+C.int64_t(r.limits.Deadline))
	r.parentCtx = ctx
	if ctx.Done() == nil {
		// Never cancelled (context.Background): nothing to watch.
		return func() { r.endCall() }
	}
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		C.wh_run_cancel(r.c)
		close(cancelled)
	})
	return func() {
		if !stop() {
			// The cancellation func has started: let it finish before the
			// run state can be reused or freed.
			<-cancelled
		}
		r.endCall()
	}
}

// endCall disarms the call's deadline and ends its host context.
func (r *run) endCall() {
	if r.callCancel != nil {
		r.callCancel()
	}
	r.callCtx, r.callCancel, r.parentCtx = nil, nil, nil
	r.c.deadline_ns = 0
	r.eng.callEnded()
}

// ctx is the context host functions get: the caller's, ended at deadline +
// grace, carrying the run (reentered). It is made on the first host call of
// a call, not per call: most calls of a small tool make none, and its timer
// was part of every call's cost. Only the call's own thread calls it.
func (r *run) ctx() context.Context {
	if r.callCtx == nil {
		cctx, cancel := context.WithDeadline(r.parentCtx, r.deadline.Add(r.limits.Grace))
		r.callCtx, r.callCancel = context.WithValue(cctx, reentryKey{}, r), cancel
	}
	return r.callCtx
}

// waitEnd is when a guest of a Go-owned wasi:io run (a driver awaiting a
// provider response, which the deadline bounds like any other wait)
// waiting on the runtime — a wasi:http exchange, a Go pollable — is
// stopped: the deadline plus the grace; zero when the call has no deadline.
// A wait that ends inside the grace still ends the call as a waiting
// DeadlineError. The spool path of capsules and tools keeps stopping such
// waits at the deadline itself (RATIONALE.md).
func (r *run) waitEnd() time.Time {
	if r.deadline.IsZero() || !r.goIO {
		return r.deadline
	}
	return r.deadline.Add(r.limits.Grace)
}

// lateReturn is the ending of a call that returned normally after its
// deadline having waited on the runtime past it (a clock wait that ended
// inside the grace, the guest returning before its next epoch check), or
// nil. A guest merely running its own code is stopped by the epoch within a
// tick; one that finishes in that tick, or a slow instantiation under load,
// is not turned into a failure.
func (r *run) lateReturn() error {
	if r.waitedCall == "" || time.Now().Before(r.deadline) {
		return nil
	}
	return &DeadlineError{Waiting: true, Call: r.waitedCall}
}

// ending classifies a failed call or instantiation (and frees err).
func (r *run) ending(ctx context.Context, err *C.wasmtime_error_t, instantiating bool) error {
	var status C.int
	isExit := bool(C.wasmtime_error_exit_status(err, &status))
	msg := errorText(err)
	switch {
	case r.c.refused > 0 || r.c.stop == C.WH_STOP_MEMORY:
		return &ResourceLimitError{Which: "memory", Detail: fmt.Sprintf("limit %d bytes", r.limits.MemoryBytes)}
	case r.deadlineStop:
		return &DeadlineError{Waiting: true, Call: r.waitedCall}
	case r.c.stop == C.WH_STOP_DEADLINE:
		// Waiting is decided by what the guest was blocked in (a capped
		// clock subscription, a Go host call), never by how late the epoch
		// stop came: under CPU contention a spinning guest can be stopped
		// late too.
		call := r.waitedCall
		return &DeadlineError{Waiting: call != "", Call: call}
	case r.c.stop == C.WH_STOP_CANCEL:
		return &CancelledError{Err: context.Cause(ctx)}
	case isExit:
		return &ExitError{Code: int(status)}
	}
	if instantiating {
		if which := limitFromMessage(msg); which != "" {
			return &ResourceLimitError{Which: which, Detail: firstLine(rootCause(msg))}
		}
	}
	if r.hostErr != nil {
		return &TrapError{Message: r.hostErr.Error(), Err: r.hostErr}
	}
	if instantiating && !strings.Contains(msg, "wasm trap") && !strings.Contains(msg, "murmur:") {
		return diag.New("E-RUN-101", "cannot instantiate component: %s", rootCause(msg)).
			WithHint("check the component's imports against what the runtime provides")
	}
	return &TrapError{Message: rootCause(msg)}
}

// limitFromMessage recognises wasmtime's instantiation-time limit errors
// (pinned by TestLimitMessages).
func limitFromMessage(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "resource limit exceeded: instance count too high"),
		strings.Contains(m, "instance count too high"):
		return "instances"
	case strings.Contains(m, "memory count too high"), strings.Contains(m, "memory limit reached"):
		return "memory"
	case strings.Contains(m, "table count too high"), strings.Contains(m, "exceeds table limits"),
		strings.Contains(m, "table") && strings.Contains(m, "limit"):
		return "table"
	}
	return ""
}

// rootCause extracts the innermost cause from wasmtime's "error ... Caused
// by: ..." text: for a trap, the guest's message.
func rootCause(msg string) string {
	msg = strings.TrimSpace(msg)
	if i := strings.LastIndex(msg, "Caused by:"); i >= 0 {
		rest := strings.TrimSpace(msg[i+len("Caused by:"):])
		lines := strings.Split(rest, "\n")
		last := strings.TrimSpace(lines[len(lines)-1])
		// Numbered chains ("0: a\n 1: b"): the last entry is the root.
		if j := strings.Index(last, ": "); j > 0 && j <= 3 && strings.Trim(last[:j], "0123456789") == "" {
			last = last[j+2:]
		}
		return last
	}
	return firstLine(msg)
}

// Call calls an exported function: iface is the exported interface
// ("murmur:tool/run@0.1.0"), "" for a top-level function. Arguments are
// checked against the function's WIT parameter types first.
func (i *Instance) Call(ctx context.Context, iface, fn string, args ...Value) (Value, error) {
	if i.reentered(ctx) {
		return nil, errReentry
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil, ErrClosed
	}
	if i.dead != nil {
		return nil, fmt.Errorf("%w (it ended: %v)", ErrInstanceDead, i.dead)
	}
	if err := ctx.Err(); err != nil {
		return nil, &CancelledError{Err: context.Cause(ctx)}
	}
	f, err := i.comp.exportFunc(iface, fn)
	if err != nil {
		return nil, err
	}
	if len(args) != len(f.typ.Params) {
		return nil, fmt.Errorf("wasmhost: %s takes %d arguments, got %d", f.name, len(f.typ.Params), len(args))
	}
	for j, a := range args {
		if err := Check(a, f.typ.Params[j].Type); err != nil {
			return nil, fmt.Errorf("wasmhost: %s argument %s: %w", f.name, f.typ.Params[j].Name, err)
		}
		if hasResources(f.typ.Params[j].Type, 0) {
			a, err := i.run.materialize(a, f.typ.Params[j].Type, nil)
			if err != nil {
				return nil, fmt.Errorf("wasmhost: %s argument %s: %w", f.name, f.typ.Params[j].Name, err)
			}
			args[j] = a
		}
	}
	var cf C.wasmtime_component_func_t
	if !C.wasmtime_component_instance_get_func(&i.inst, i.cctx, f.idx, &cf) {
		return nil, fmt.Errorf("wasmhost: %s is not a function of this instance", f.name)
	}
	var stack [4]cval
	cargs := stack[:0]
	if len(args) > len(stack) {
		cargs = make([]cval, 0, len(args))
	}
	cargs = cargs[:len(args)]
	for j, a := range args {
		lower(a, f.typ.Params[j].Type, &cargs[j])
	}
	var res [1]cval
	nres := 0
	if f.typ.Result != nil {
		nres = 1
	}
	var argp *cval
	if len(cargs) > 0 {
		argp = &cargs[0]
	}
	r := i.run
	o, _ := i.watched(ctx, func(done func()) callOut {
		cerr := C.wasmtime_component_func_call(&cf, i.cctx, argp, C.size_t(len(cargs)), &res[0], C.size_t(nres))
		deleteVals(cargs)
		if cerr != nil {
			done()
			return callOut{err: r.ending(ctx, cerr, false)}
		}
		var out Value
		if nres == 1 {
			out = lift(&res[0], r)
			deleteVals(res[:])
		}
		var readErr error
		if f.fromMemory {
			// Read before post-return frees the return area.
			if p, ok := out.(uint32); ok {
				out, readErr = r.readResult(f.typ.Result, p, r.spill)
			} else {
				readErr = &TrapError{Message: "tool result: no return area"}
			}
		}
		cerr = C.wasmtime_component_func_post_return(&cf, i.cctx)
		done()
		if cerr != nil {
			return callOut{err: r.ending(ctx, cerr, false)}
		}
		if readErr != nil {
			// As wasmtime's own lift failing: the call trapped.
			return callOut{err: readErr}
		}
		if late := r.lateReturn(); late != nil {
			// The guest got back from a wait after the deadline and returned
			// before its next epoch check: the call still ran over.
			return callOut{err: late}
		}
		return callOut{out: out}
	})
	if o.err != nil {
		i.dead = o.err
	}
	return o.out, o.err
}

// watched runs body — one instantiation or call into the store — under the
// deadline and the caller's cancellation. body runs on a goroutine of its own
// so that a guest blocked inside wasmtime's native WASI code (a read of a
// FIFO in a preopened directory: neither the epoch nor a context reaches it)
// cannot hold the caller past deadline + grace: past that (plus a margin, so
// the normal endings win whenever they can) watched gives up on it
// (finished = false) with a waiting DeadlineError, and the instance keeps
// the goroutine's channel so that Close frees the store only once the native
// code returns. body calls done once it is out of wasmtime, before it
// classifies the ending; done is idempotent. Callers hold i.mu (or, in
// Instantiate, own i alone).
func (i *Instance) watched(ctx context.Context, body func(done func()) callOut) (callOut, bool) {
	r := i.run
	disarm := r.beginCall(ctx)
	C.wasmtime_context_set_epoch_deadline(i.cctx, 1)
	if !i.comp.mayBlock {
		// Nothing the component imports can block in native code: the
		// epoch (a running guest, cancellation, the memory budget) and
		// the capped clock waits stop it, so it runs on the caller's
		// goroutine, with no hand-off and no watchdog timer.
		disarmed := false
		o := body(func() {
			if !disarmed {
				disarmed = true
				disarm()
			}
		})
		if !disarmed {
			disarm()
		}
		return o, true
	}
	var once sync.Once
	done := func() { once.Do(disarm) }
	ch := make(chan callOut, 1)
	onWorker(func() {
		o := body(done)
		done()
		ch <- o
	})
	o, finished := r.await(ctx, ch)
	if !finished {
		r.peak = int64(r.c.mem_peak)
		i.stuck = ch
	}
	return o, finished
}

// Watched calls run on kept worker goroutines rather than a new goroutine
// each: a new one starts with a small stack and grows it (copying, with
// the runtime's stack-map lookups) in the cgo call path every time, ~3 % of
// a Go-kit tool call. A worker whose call is stuck in native code stays
// with it; at most idleWorkers wait for work.
const idleWorkers = 8

var workers = make(chan chan func(), idleWorkers)

func onWorker(f func()) {
	select {
	case w := <-workers:
		w <- f
	default:
		w := make(chan func(), 1)
		w <- f
		go work(w)
	}
}

func work(w chan func()) {
	for f := range w {
		f()
		select {
		case workers <- w:
		default:
			return // enough idle workers
		}
	}
}

// await waits for a call's goroutine (finished = true), or gives up on it
// (false) at deadline + grace + watchdogSlack with a waiting DeadlineError,
// or grace + watchdogSlack after ctx ends with a CancelledError: a call
// stopped normally (epoch, capped clock wait, host function honouring its
// context) always delivers before then.
func (r *run) await(ctx context.Context, ch chan callOut) (callOut, bool) {
	watchdog := time.NewTimer(time.Until(r.deadline.Add(r.limits.Grace + watchdogSlack)))
	defer watchdog.Stop()
	done := ctx.Done()
	cancelled := false
	for {
		select {
		case o := <-ch:
			return o, true
		case <-done:
			done = nil
			if d := r.limits.Grace + watchdogSlack; time.Now().Add(d).Before(r.deadline.Add(r.limits.Grace + watchdogSlack)) {
				cancelled = true
				watchdog.Reset(d)
			}
		case <-watchdog.C:
			if cancelled {
				return callOut{err: &CancelledError{Err: context.Cause(ctx)}}, false
			}
			return callOut{err: &DeadlineError{Waiting: true, Call: r.blockedIn()}}, false
		}
	}
}

// blockedIn names what an abandoned call is blocked in: a Go host function
// that ignores its context, or else wasmtime's own WASI code.
func (r *run) blockedIn() string {
	if p := r.inHost.Load(); p != nil {
		return *p
	}
	return BlockedInWASI
}

// callOut is what a call's goroutine hands back.
type callOut struct {
	out Value
	err error
}

// watchdogSlack is how long past deadline + grace a call blocked where
// nothing can interrupt it is left before the caller is given its ending.
const watchdogSlack = 500 * time.Millisecond

// BlockedInWASI is DeadlineError.Call for a call stopped while blocked
// inside wasmtime's own WASI implementation (such as a read of a FIFO),
// where the host cannot tell which function it is.
const BlockedInWASI = "wasi (a blocking call)"

// MemoryPeak is the highest total linear memory of the run so far, in bytes.
// It waits for a call in progress; after Close it is the final figure.
func (i *Instance) MemoryPeak() int64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.run.c == nil || i.stuck != nil {
		return i.run.peak
	}
	return int64(i.run.c.mem_peak)
}

// reentryKey marks the context a host function gets with the run it serves.
type reentryKey struct{}

// errReentry: the component model forbids entering an instance from its own
// host import, and the instance's lock would otherwise wait forever.
var errReentry = errors.New("wasmhost: an instance cannot be called from one of its own host functions")

// reentered tells whether ctx is that of a host function this instance is
// running (a call made from it would deadlock on i.mu).
func (i *Instance) reentered(ctx context.Context) bool {
	return ctx != nil && ctx.Value(reentryKey{}) == i.run
}

// Close frees the store and everything in it. It is safe to call twice. It
// waits for a call in progress, so it must not be called from one of the
// instance's own host functions.
func (i *Instance) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil
	}
	i.closed = true
	if i.stuck != nil {
		go func() {
			<-i.stuck
			i.free()
		}()
		return nil
	}
	i.free()
	return nil
}

// free releases the store; the instance is closed and no call is running.
func (i *Instance) free() {
	defer i.eng.leave()
	r := i.run
	for _, res := range r.resources {
		C.wasmtime_component_resource_any_delete(res.p)
		res.p = nil
	}
	r.resources = nil
	r.peak = int64(r.c.mem_peak)
	C.wasmtime_store_delete(i.store)
	r.providersClose()
	C.wh_run_free(r.c)
	r.c = nil
	r.h.Delete()
	i.comp.release()
}

var errNoHelper = errors.New("wasmhost: clock helper unavailable")

func hasResources(t *Type, depth int) bool {
	if t == nil || depth > maxDepth {
		return false
	}
	if t.Kind == KindOwn || t.Kind == KindBorrow {
		return true
	}
	if hasResources(t.Elem, depth+1) || hasResources(t.Ok, depth+1) || hasResources(t.Err, depth+1) {
		return true
	}
	for _, f := range t.Fields {
		if hasResources(f.Type, depth+1) {
			return true
		}
	}
	for _, c := range t.Cases {
		if hasResources(c.Type, depth+1) {
			return true
		}
	}
	for _, e := range t.Tuple {
		if hasResources(e, depth+1) {
			return true
		}
	}
	return false
}
