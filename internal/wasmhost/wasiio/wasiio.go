// Package wasiio is Go's wasi:io for the engine (internal/wasmhost): the
// streams, pollables and standard streams of the runs whose caller asks for
// them (RunConfig.GoIO), registered as the engine's wasi:io provider when
// the package is imported.
package wasiio

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

func init() { wasmhost.Register(wasmhost.ProviderGoIO, provider{}) }

// run is what a provider sees of a run.
type run = wasmhost.Run

// provider is Go's wasi:io as the engine's Provider.
type provider struct{}

func (provider) Provides(instance string) bool { return goIOProvides(instance) }

func (provider) Open(r *run, w wasmhost.WASI) (wasmhost.WASI, error) { return ownIO(r, w) }

// Func is the Go answer of a run for iface#fn (iface without its version),
// or nil.
func (provider) Func(iface, fn string, typ *wasmhost.FuncType) wasmhost.ProviderFunc {
	switch iface {
	case "wasi:io/poll", "wasi:io/streams", "wasi:io/error", "wasi:cli/stdin", "wasi:cli/stdout", "wasi:cli/stderr", clockIface:
		if impl := goIOFuncs[iface+"#"+fn]; impl != nil {
			return impl
		}
		if strings.HasPrefix(fn, "[method]") {
			// A method this host does not know (a later 0.2.x addition):
			// refused like a closed stream.
			return refusal(typ, "closed")
		}
	case "wasi:filesystem/types", "wasi:filesystem/preopens":
		switch fn {
		case "get-directories":
			return func(*run, []wasmhost.Value) (wasmhost.Value, error) { return wasmhost.List{}, nil }
		case "filesystem-error-code":
			return func(*run, []wasmhost.Value) (wasmhost.Value, error) { return wasmhost.None, nil }
		default:
			// No descriptor exists: every method is bad-descriptor.
			return refusal(typ, "bad-descriptor")
		}
	default:
		if strings.HasPrefix(iface, "wasi:sockets/") {
			return refusal(typ, "access-denied")
		}
	}
	return nil
}

const clockIface = "wasi:clocks/monotonic-clock"

// maxDepth bounds the nesting of a refused result's zero value, as the
// engine bounds values.
const maxDepth = 100

// goWritePermit is what check-write grants: a guest writes at most this
// much a call (wasmtime's file streams grant the same order).
const goWritePermit = 64 << 10

// blockingWriteMax is the wasi:io bound on blocking-write-and-flush's
// contents ("at most 4096 bytes"); wasmtime traps past it.
const blockingWriteMax = 4096

var okUnit = wasmhost.Ok(nil)

func ioOf(r *run) *ioRun { return r.State().(*ioRun) }

func objAs[T any](r *run, v wasmhost.Value) T {
	var zero T
	o, ok := r.Object(v)
	if !ok {
		return zero
	}
	t, _ := o.(T)
	return t
}

func caseOf(t *wasmhost.Type, name string) *wasmhost.Case {
	for i := range t.Cases {
		if t.Cases[i].Name == name {
			return &t.Cases[i]
		}
	}
	return nil
}

// Go-owned wasi:io, for the runs whose caller asks for it (RunConfig.GoIO;
// see this package's RATIONALE.md, "Go's wasi:io: what it answers"): Murmur gives it to
// a driver's runs, and to a capsule's or tool's whose component uses
// wasi:http without wasi:filesystem (internal/wit.ChooseIO).
//
// wasmtime 39's C API can mint wasip2 streams only over files, and a file
// stream reads a growing file as ended, so a wasi:http response body can
// reach a wasip2 guest only once it is whole. A driver's turn is an SSE
// response it must relay as it arrives, and a driver runs with no
// preopens, so for driver runs the host answers the interfaces that hand
// out streams and pollables itself: wasi:io (poll, streams, error),
// wasi:cli stdin/stdout/stderr, the monotonic clock, wasi:filesystem (no
// descriptors) and wasi:sockets (refused). incoming-body.stream is then a
// Go input-stream fed as the server sends, outgoing-body.write a Go
// output-stream, and every pollable a Go value that poll waits on with the
// call's deadline. The rest of WASI (environment, exit, random, wall clock,
// terminals) stays wasip2's: none of it touches a stream.

// goIOProvides reports whether a run with Go's wasi:io answers the
// instance in Go.
func goIOProvides(name string) bool {
	iface, ver, ok := strings.Cut(name, "@")
	if !ok || !strings.HasPrefix(ver, "0.2.") {
		return false
	}
	switch iface {
	case "wasi:io/poll", "wasi:io/streams", "wasi:io/error",
		"wasi:cli/stdin", "wasi:cli/stdout", "wasi:cli/stderr",
		"wasi:clocks/monotonic-clock",
		"wasi:filesystem/types", "wasi:filesystem/preopens":
		return true
	}
	return strings.HasPrefix(iface, "wasi:sockets/")
}

// ioRun is the Go-owned WASI state of a driver run.
type ioRun struct {
	stdin          []byte
	stdinStream    *wasmhost.InputStream // made on the first get-stdin, shared by all
	stdout, stderr *os.File              // nil: discarded
}

// stdinHandle is one get-stdin handle: as in wasmtime, every handle reads
// the one stdin (a read through any of them moves on for all), and
// dropping a handle does not end it for the others.
type stdinHandle struct {
	wasmhost.Family // its pollables
	s               *wasmhost.InputStream
}

// Close closes the run's stdout and stderr (the engine calls it when the
// run ends).
func (io *ioRun) Close() error {
	for _, f := range []*os.File{io.stdout, io.stderr} {
		if f != nil {
			f.Close()
		}
	}
	return nil
}

// ownIO makes Go answer r's wasi:io (RunConfig.GoIO): its std streams are opened here (the Go
// streams write to them), and the WASI context it returns for wasip2 keeps
// only what wasip2 still answers (arguments, environment).
func ownIO(r *run, w wasmhost.WASI) (wasmhost.WASI, error) {
	if len(w.Preopens) > 0 {
		return w, diag.New("E-RUN-104", "a driver run has no filesystem, but %d preopens were given", len(w.Preopens)).
			WithHint("run components that need a work folder as capsules or tools")
	}
	io := &ioRun{stdin: w.Stdin}
	open := func(f *os.File, path, name string) (*os.File, error) {
		switch {
		case f != nil:
			// Our own duplicate: the caller may close f once Instantiate
			// has returned.
			rc, err := f.SyscallConn()
			if err != nil {
				return nil, err
			}
			var nfd int
			var derr error
			if err := rc.Control(func(fd uintptr) { nfd, derr = syscall.Dup(int(fd)) }); err != nil {
				return nil, err
			}
			if derr != nil {
				return nil, derr
			}
			syscall.CloseOnExec(nfd)
			return os.NewFile(uintptr(nfd), f.Name()), nil
		case path != "":
			return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		}
		return nil, nil
	}
	var err error
	if io.stdout, err = open(w.Stdout, w.StdoutPath, "stdout"); err != nil {
		return w, diag.Wrap(err, "E-RUN-104", "cannot open the guest's stdout").WithHint("check that its directory exists and is writable")
	}
	if io.stderr, err = open(w.Stderr, w.StderrPath, "stderr"); err != nil {
		io.Close()
		return w, diag.Wrap(err, "E-RUN-104", "cannot open the guest's stderr").WithHint("check that its directory exists and is writable")
	}
	r.SetState(io)
	return wasmhost.WASI{Args: w.Args, Env: w.Env}, nil
}

// exists only so a refusal can be typed.
type refused struct{}

// refusal answers a function of an interface that has nothing behind it
// for a driver: a result's error side gets errCase, anything else a zero
// value of its type (a resource result a fresh refused object, a pollable
// a ready one).
func refusal(typ *wasmhost.FuncType, errCase string) func(*run, []wasmhost.Value) (wasmhost.Value, error) {
	return func(r *run, _ []wasmhost.Value) (wasmhost.Value, error) {
		if typ == nil || typ.Result == nil {
			return nil, nil
		}
		t := typ.Result
		if t.Kind == wasmhost.KindResult {
			return wasmhost.Err(caseValue(r, t.Err, errCase)), nil
		}
		return zeroValue(r, t, 0), nil
	}
}

func caseValue(r *run, t *wasmhost.Type, c string) wasmhost.Value {
	if t == nil {
		return nil
	}
	switch t.Kind {
	case wasmhost.KindEnum:
		if slices.Contains(t.Names, c) {
			return wasmhost.Enum(c)
		}
	case wasmhost.KindVariant:
		if cs := caseOf(t, c); cs != nil && cs.Type == nil {
			return wasmhost.Variant{Case: c}
		}
	}
	return zeroValue(r, t, 0)
}

func zeroValue(r *run, t *wasmhost.Type, depth int) wasmhost.Value {
	if t == nil || depth > maxDepth {
		return nil
	}
	switch t.Kind {
	case wasmhost.KindBool:
		return false
	case wasmhost.KindS8:
		return int8(0)
	case wasmhost.KindS16:
		return int16(0)
	case wasmhost.KindS32:
		return int32(0)
	case wasmhost.KindS64:
		return int64(0)
	case wasmhost.KindU8:
		return uint8(0)
	case wasmhost.KindU16:
		return uint16(0)
	case wasmhost.KindU32:
		return uint32(0)
	case wasmhost.KindU64:
		return uint64(0)
	case wasmhost.KindF32:
		return float32(0)
	case wasmhost.KindF64:
		return float64(0)
	case wasmhost.KindChar:
		return wasmhost.Char(0)
	case wasmhost.KindString:
		return ""
	case wasmhost.KindList:
		return wasmhost.List{}
	case wasmhost.KindOption:
		return wasmhost.None
	case wasmhost.KindFlags:
		return wasmhost.Flags{}
	case wasmhost.KindEnum:
		if len(t.Names) > 0 {
			return wasmhost.Enum(t.Names[0])
		}
	case wasmhost.KindResult:
		return wasmhost.Ok(zeroValue(r, t.Ok, depth+1))
	case wasmhost.KindVariant:
		if len(t.Cases) > 0 {
			return wasmhost.Variant{Case: t.Cases[0].Name, Value: zeroValue(r, t.Cases[0].Type, depth+1)}
		}
	case wasmhost.KindRecord:
		rec := make(wasmhost.Record, len(t.Fields))
		for i, f := range t.Fields {
			rec[i] = wasmhost.FieldValue{Name: f.Name, Value: zeroValue(r, f.Type, depth+1)}
		}
		return rec
	case wasmhost.KindTuple:
		tu := make(wasmhost.Tuple, len(t.Tuple))
		for i, e := range t.Tuple {
			tu[i] = zeroValue(r, e, depth+1)
		}
		return tu
	case wasmhost.KindOwn, wasmhost.KindBorrow:
		if t.Resource == "pollable" {
			return r.NewObject(wasmhost.ReadyPollable(""))
		}
		return r.NewObject(&refused{})
	}
	return nil
}

func streamClosed() wasmhost.Result { return wasmhost.Err(wasmhost.Variant{Case: "closed"}) }

// streamFailed is last-operation-failed with a fresh error resource.
func streamFailed(r *run, e *wasmhost.IOError) wasmhost.Result {
	return wasmhost.Err(wasmhost.Variant{Case: "last-operation-failed", Value: r.NewObject(e)})
}

// inputEnding is a drained stream's answer: closed, or the error that
// ended it.
func inputEnding(r *run, ending wasmhost.Value) wasmhost.Result {
	if ending == nil {
		return streamClosed()
	}
	return streamFailed(r, &wasmhost.IOError{Msg: "the response body failed: " + errorCodeText(ending), Code: ending})
}

func errorCodeText(code wasmhost.Value) string {
	if v, ok := code.(wasmhost.Variant); ok {
		if o, ok := v.Value.(wasmhost.Option); ok && o.Some {
			return fmt.Sprintf("%s(%v)", v.Case, o.Value)
		}
		return v.Case
	}
	return fmt.Sprint(code)
}

// trapf is an error that traps the guest, for a use wasmtime traps on.
func trapf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func inputOf(r *run, v wasmhost.Value) (*wasmhost.InputStream, error) {
	o, _ := r.Object(v)
	switch s := o.(type) {
	case *wasmhost.InputStream:
		return s, nil
	case *stdinHandle:
		return s.s, nil
	}
	return nil, trapf("wasi:io: not an input-stream of this host")
}

func outputOf(r *run, v wasmhost.Value) (*wasmhost.OutputStream, error) {
	if o := objAs[*wasmhost.OutputStream](r, v); o != nil {
		return o, nil
	}
	return nil, trapf("wasi:io: not an output-stream of this host")
}

func blockingRead(r *run, s *wasmhost.InputStream, n uint64, skip bool) (wasmhost.Value, error) {
	for {
		b, ending, ok := s.Take(n)
		if !ok {
			return inputEnding(r, ending), nil
		}
		if len(b) > 0 || n == 0 {
			if skip {
				return wasmhost.Ok(uint64(len(b))), nil
			}
			return wasmhost.Ok(wasmhost.Bytes(b)), nil
		}
		if _, err := r.WaitAny([]*wasmhost.Pollable{s.Pollable()}); err != nil {
			return nil, err
		}
	}
}

func outWrite(r *run, o *wasmhost.OutputStream, p []byte, limit int, fn string) (wasmhost.Value, error) {
	if len(p) > limit {
		return nil, trapf("wasi:io/streams#[method]output-stream.%s: %d bytes is more than the %d the stream permits", fn, len(p), limit)
	}
	if o.Failed() {
		return streamClosed(), nil
	}
	if err := o.Write(p); err != nil {
		return streamFailed(r, &wasmhost.IOError{Msg: err.Error()}), nil
	}
	return okUnit, nil
}

// stdStream makes the guest's stdout or stderr: writes go to f, or nowhere.
func stdStream(f *os.File) *wasmhost.OutputStream {
	if f == nil {
		return wasmhost.NewOutputStream(nil)
	}
	return wasmhost.NewOutputStream(func(p []byte) error { _, err := f.Write(p); return err })
}

func u64Arg(v wasmhost.Value) uint64 { n, _ := v.(uint64); return n }

var goIOFuncs = map[string]func(*run, []wasmhost.Value) (wasmhost.Value, error){
	"wasi:io/poll#poll": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		l, _ := a[0].(wasmhost.List)
		if len(l) == 0 {
			return nil, trapf("wasi:io/poll#poll: empty poll list")
		}
		ps := make([]*wasmhost.Pollable, len(l))
		for i, v := range l {
			if ps[i] = objAs[*wasmhost.Pollable](r, v); ps[i] == nil {
				return nil, trapf("wasi:io/poll#poll: not a pollable of this host")
			}
		}
		ready, err := r.WaitAny(ps)
		if err != nil {
			return nil, err
		}
		out := make(wasmhost.List, len(ready))
		for i, x := range ready {
			out[i] = x
		}
		return out, nil
	},
	"wasi:io/poll#[method]pollable.ready": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		p := objAs[*wasmhost.Pollable](r, a[0])
		if p == nil {
			return nil, trapf("wasi:io/poll: not a pollable of this host")
		}
		return p.Ready(), nil
	},
	"wasi:io/poll#[method]pollable.block": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		p := objAs[*wasmhost.Pollable](r, a[0])
		if p == nil {
			return nil, trapf("wasi:io/poll: not a pollable of this host")
		}
		_, err := r.WaitAny([]*wasmhost.Pollable{p})
		return nil, err
	},
	"wasi:io/error#[method]error.to-debug-string": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if e := objAs[*wasmhost.IOError](r, a[0]); e != nil {
			return e.Msg, nil
		}
		return "", nil
	},

	"wasi:io/streams#[method]input-stream.read": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		s, err := inputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		b, ending, ok := s.Take(u64Arg(a[1]))
		if !ok {
			return inputEnding(r, ending), nil
		}
		return wasmhost.Ok(wasmhost.Bytes(b)), nil
	},
	"wasi:io/streams#[method]input-stream.blocking-read": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		s, err := inputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		return blockingRead(r, s, u64Arg(a[1]), false)
	},
	"wasi:io/streams#[method]input-stream.skip": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		s, err := inputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		b, ending, ok := s.Take(u64Arg(a[1]))
		if !ok {
			return inputEnding(r, ending), nil
		}
		return wasmhost.Ok(uint64(len(b))), nil
	},
	"wasi:io/streams#[method]input-stream.blocking-skip": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		s, err := inputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		return blockingRead(r, s, u64Arg(a[1]), true)
	},
	"wasi:io/streams#[method]input-stream.subscribe": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		// One look-up: a lent handle converts to the host's once.
		o, _ := r.Object(a[0])
		var s *wasmhost.InputStream
		var fam *wasmhost.Family
		switch x := o.(type) {
		case *wasmhost.InputStream:
			s, fam = x, &x.Family
		case *stdinHandle:
			s, fam = x.s, &x.Family
		default:
			return nil, trapf("wasi:io: not an input-stream of this host")
		}
		return r.NewObject(fam.Adopt(s.Pollable())), nil
	},
	"wasi:io/streams#[method]output-stream.check-write": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		o, err := outputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		if o.Failed() {
			return streamClosed(), nil
		}
		return wasmhost.Ok(uint64(goWritePermit)), nil
	},
	"wasi:io/streams#[method]output-stream.write": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		o, err := outputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		return outWrite(r, o, []byte(wasmhost.BytesOf(a[1])), goWritePermit, "write")
	},
	"wasi:io/streams#[method]output-stream.blocking-write-and-flush": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		o, err := outputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		return outWrite(r, o, []byte(wasmhost.BytesOf(a[1])), blockingWriteMax, "blocking-write-and-flush")
	},
	"wasi:io/streams#[method]output-stream.write-zeroes": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		o, err := outputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		n := u64Arg(a[1])
		if n > goWritePermit {
			return nil, trapf("wasi:io/streams#[method]output-stream.write-zeroes: %d bytes is more than the %d the stream permits", n, goWritePermit)
		}
		return outWrite(r, o, make([]byte, n), goWritePermit, "write-zeroes")
	},
	"wasi:io/streams#[method]output-stream.blocking-write-zeroes-and-flush": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		o, err := outputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		n := u64Arg(a[1])
		if n > blockingWriteMax {
			return nil, trapf("wasi:io/streams#[method]output-stream.blocking-write-zeroes-and-flush: %d bytes is more than %d", n, blockingWriteMax)
		}
		return outWrite(r, o, make([]byte, n), blockingWriteMax, "blocking-write-zeroes-and-flush")
	},
	"wasi:io/streams#[method]output-stream.flush":          outFlush,
	"wasi:io/streams#[method]output-stream.blocking-flush": outFlush,
	"wasi:io/streams#[method]output-stream.subscribe": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		o, err := outputOf(r, a[0])
		if err != nil {
			return nil, err
		}
		// Writes are synchronous: the stream is always ready for one.
		return r.NewObject(o.Adopt(wasmhost.ReadyPollable("wasi:io/streams#[method]output-stream.subscribe"))), nil
	},
	"wasi:io/streams#[method]output-stream.splice": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		return outSplice(r, a, false)
	},
	"wasi:io/streams#[method]output-stream.blocking-splice": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		return outSplice(r, a, true)
	},

	"wasi:cli/stdin#get-stdin": func(r *run, _ []wasmhost.Value) (wasmhost.Value, error) {
		io := ioOf(r)
		if io.stdinStream == nil {
			io.stdinStream = wasmhost.WholeInputStream(io.stdin, "wasi:io/streams#[method]input-stream.blocking-read")
		}
		return r.NewObject(&stdinHandle{s: io.stdinStream}), nil
	},
	"wasi:cli/stdout#get-stdout": func(r *run, _ []wasmhost.Value) (wasmhost.Value, error) {
		return r.NewObject(stdStream(ioOf(r).stdout)), nil
	},
	"wasi:cli/stderr#get-stderr": func(r *run, _ []wasmhost.Value) (wasmhost.Value, error) {
		return r.NewObject(stdStream(ioOf(r).stderr)), nil
	},

	clockIface + "#now": func(*run, []wasmhost.Value) (wasmhost.Value, error) {
		return uint64(time.Since(wasmhost.MonotonicZero())), nil
	},
	clockIface + "#resolution": func(*run, []wasmhost.Value) (wasmhost.Value, error) { return uint64(1), nil },
	clockIface + "#subscribe-duration": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		d := u64Arg(a[0])
		at := time.Now()
		if d > uint64(time.Duration(1<<62)) {
			at = at.Add(1 << 62)
		} else {
			at = at.Add(time.Duration(d))
		}
		return r.NewObject(r.Timer(at, "subscribe-duration")), nil
	},
	clockIface + "#subscribe-instant": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		w := u64Arg(a[0])
		if w > uint64(time.Duration(1<<62)) {
			w = uint64(time.Duration(1 << 62))
		}
		return r.NewObject(r.Timer(wasmhost.MonotonicZero().Add(time.Duration(w)), "subscribe-instant")), nil
	},
}

func outFlush(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
	o, err := outputOf(r, a[0])
	if err != nil {
		return nil, err
	}
	if o.Failed() {
		return streamClosed(), nil
	}
	return okUnit, nil
}

func outSplice(r *run, a []wasmhost.Value, blocking bool) (wasmhost.Value, error) {
	o, err := outputOf(r, a[0])
	if err != nil {
		return nil, err
	}
	s, err := inputOf(r, a[1])
	if err != nil {
		return nil, err
	}
	n := min(u64Arg(a[2]), goWritePermit)
	var got wasmhost.Value
	if blocking {
		got, err = blockingRead(r, s, n, false)
		if err != nil {
			return nil, err
		}
	} else {
		b, ending, ok := s.Take(n)
		got = wasmhost.Ok(wasmhost.Bytes(b))
		if !ok {
			got = inputEnding(r, ending)
		}
	}
	res := got.(wasmhost.Result)
	if res.IsErr {
		return res, nil
	}
	b := res.Value.(wasmhost.Bytes)
	w, err := outWrite(r, o, b, goWritePermit, "splice")
	if err != nil || w.(wasmhost.Result).IsErr {
		return w, err
	}
	return wasmhost.Ok(uint64(len(b))), nil
}
