package wasmhost

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// TestFileStreamEOFIsFinal records the wasmtime 39 behaviour the spool
// design rests on (RATIONALE.md): a wasip2 input-stream over a regular file
// reports closed once a blocking-read meets the end of the file, and stays
// closed when bytes are appended later; a fresh stream over the same file
// sees them. So a body file that is still growing cannot be handed to the
// guest as one stream, and no sequence of files can either (the guest reads
// one incoming-body.stream).
func TestFileStreamEOFIsFinal(t *testing.T) {
	var body *os.File
	var name string
	h := NewHost()
	sd := newStreamDir(t)
	h.Define("murmur:probe/spool", "open", func(ctx context.Context, _ []Value) (Value, error) {
		r := ctx.Value(reentryKey{}).(*run)
		if body == nil {
			f, n, err := sd.create("probe")
			if err != nil {
				return nil, err
			}
			body, name = f, n
			if _, err := f.WriteString("abc"); err != nil {
				return nil, err
			}
		}
		return r.openStream(name, false)
	})
	i := instantiateSpool(t, "filestream.wat", RunConfig{Host: h, WASI: sd.wasi()})
	t.Cleanup(func() {
		if body != nil {
			body.Close()
		}
	})
	read := func(step string, want int32) {
		t.Helper()
		v, err := i.Call(bg, "", "read", uint64(100))
		if err != nil || v != want {
			t.Fatalf("%s: read = %v, %v; want %d", step, v, err, want)
		}
	}
	if _, err := i.Call(bg, "", "open"); err != nil {
		t.Fatal(err)
	}
	read("the first read", 3)
	read("at the end of the file", -1)
	if _, err := body.WriteString("def"); err != nil {
		t.Fatal(err)
	}
	read("after bytes were appended", -1)
	if _, err := i.Call(bg, "", "open"); err != nil {
		t.Fatal(err)
	}
	read("a fresh stream over the grown file", 6)
}

// TestFileStreamOverFIFOFails: a pipe cannot stand in for a growing file.
// wasip2's file stream reads with pread, which a FIFO refuses, so the
// guest's first read fails (last-operation-failed) even with bytes waiting.
func TestFileStreamOverFIFOFails(t *testing.T) {
	var writer *os.File
	h := NewHost()
	sd := newStreamDir(t)
	h.Define("murmur:probe/spool", "open", func(ctx context.Context, _ []Value) (Value, error) {
		r := ctx.Value(reentryKey{}).(*run)
		path := sd.path("fifo")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			return nil, err
		}
		// Opened read-write first, so the helper's read-only open does not
		// wait for a writer.
		w, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		writer = w
		if _, err := w.WriteString("abc"); err != nil {
			return nil, err
		}
		return r.openStream("fifo", false)
	})
	i := instantiateSpool(t, "filestream.wat", RunConfig{Host: h, WASI: sd.wasi()})
	t.Cleanup(func() {
		if writer != nil {
			writer.Close()
		}
	})
	if _, err := i.Call(bg, "", "open"); err != nil {
		t.Fatal(err)
	}
	if v, err := i.Call(bg, "", "read", uint64(100)); err != nil || v != int32(-2) {
		t.Fatalf("read = %v, %v; want -2 (last-operation-failed)", v, err)
	}
}

// TestWasip2HandleOpaque records why the host cannot shadow wasi:io/streams
// while keeping wasip2's own resource types (which would leave filesystem
// and cli to wasip2): a host function handed a wasip2 stream cannot read a
// rep or any identity from it, so it could not tell a body it minted from a
// file the guest opened. Only the C API's own host types convert.
func TestWasip2HandleOpaque(t *testing.T) {
	var reps []bool
	h := NewHost()
	sd := newStreamDir(t)
	h.Define("murmur:probe/spool", "open", func(ctx context.Context, _ []Value) (Value, error) {
		r := ctx.Value(reentryKey{}).(*run)
		f, name, err := sd.create("probe")
		if err != nil {
			return nil, err
		}
		defer f.Close()
		s, err := r.openStream(name, false)
		if err != nil {
			return nil, err
		}
		_, ok := s.HostRep()
		reps = append(reps, ok)
		return s, nil
	})
	i := instantiateSpool(t, "filestream.wat", RunConfig{Host: h, WASI: sd.wasi()})
	if _, err := i.Call(bg, "", "open"); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0] {
		t.Fatalf("HostRep of a wasip2 input-stream converted: %v", reps)
	}
}

// BenchmarkHostBytesResult: a Go host function returning list<u8> to the
// guest, per byte handed over. This is the shape every read of a Go-owned
// wasi:io input-stream would take through wasmtime 39's dynamic C API, which
// builds one 32-byte value per element on the way in (RATIONALE.md).
func BenchmarkHostBytesResult(b *testing.B) {
	for _, n := range []int{1 << 10, 64 << 10} {
		b.Run(strconv.Itoa(n>>10)+"KiB", func(b *testing.B) {
			buf := make(Bytes, n)
			h := NewHost()
			h.Define("murmur:bench/bytes", "get", func(ctx context.Context, a []Value) (Value, error) {
				return buf[:a[0].(uint32)], nil
			})
			e := benchEngine(b, false)
			c, err := e.Compile(benchBinary(b, "bytes.wat"))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			i, err := instantiateFull(e, context.Background(), c, RunConfig{Host: h})
			if err != nil {
				b.Fatal(err)
			}
			defer i.Close()
			b.SetBytes(int64(n))
			b.ReportAllocs()
			b.ResetTimer()
			v, err := i.Call(context.Background(), "", "loop", uint32(b.N), uint32(n))
			if err != nil || v != uint32(b.N*n) {
				b.Fatal(v, err)
			}
		})
	}
}

// BenchmarkFileStreamRead: guest blocking-reads on a wasip2 file
// input-stream (the spool's way: wasmtime copies into guest memory itself),
// per byte handed over.
func BenchmarkFileStreamRead(b *testing.B) {
	for _, n := range []int{1 << 10, 64 << 10} {
		b.Run(strconv.Itoa(n>>10)+"KiB", func(b *testing.B) {
			var body *os.File
			h := NewHost()
			sd := newStreamDir(b)
			h.Define("murmur:probe/spool", "open", func(ctx context.Context, _ []Value) (Value, error) {
				r := ctx.Value(reentryKey{}).(*run)
				f, name, err := sd.create("probe")
				if err != nil {
					return nil, err
				}
				body = f
				if err := f.Truncate(1 << 40); err != nil { // sparse: reads never reach the end
					return nil, err
				}
				return r.openStream(name, false)
			})
			e := benchEngine(b, false)
			c, err := e.Compile(benchBinary(b, "filestream.wat"))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			SpoolOnly(c)
			i, err := instantiateFull(e, context.Background(), c, RunConfig{Host: h, WASI: sd.wasi()})
			if err != nil {
				b.Fatal(err)
			}
			defer i.Close()
			if _, err := i.Call(bg, "", "open"); err != nil {
				b.Fatal(err)
			}
			defer body.Close()
			b.SetBytes(int64(n))
			b.ReportAllocs()
			b.ResetTimer()
			// One guest call looping b.N times, as BenchmarkHostBytesResult.
			v, err := i.Call(bg, "", "drain", uint32(b.N), uint64(n))
			if err != nil || v != uint32(b.N*n) {
				b.Fatal(v, err)
			}
		})
	}
}

// BenchmarkOpenStream: handing the guest a new wasip2 input-stream over a
// fresh spool file (what incoming-body.stream does per response): the
// host creates the file, the stream helper opens it, the guest takes the
// handle and drops the previous one.
func BenchmarkOpenStream(b *testing.B) {
	h := NewHost()
	sd := newStreamDir(b)
	h.Define("murmur:probe/spool", "open", func(ctx context.Context, _ []Value) (Value, error) {
		r := ctx.Value(reentryKey{}).(*run)
		f, name, err := sd.create("probe")
		if err != nil {
			return nil, err
		}
		f.Close()
		s, err := r.openStream(name, false)
		os.Remove(sd.path(name))
		return s, err
	})
	e := benchEngine(b, false)
	c, err := e.Compile(benchBinary(b, "filestream.wat"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	SpoolOnly(c)
	i, err := instantiateFull(e, context.Background(), c, RunConfig{Host: h, WASI: sd.wasi()})
	if err != nil {
		b.Fatal(err)
	}
	defer i.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := i.Call(bg, "", "open"); err != nil {
			b.Fatal(err)
		}
	}
}

// streamDir stands in for wasi:http's spool in the tests of the engine's
// file streams: a directory the run has as its ForStreams preopen, on a
// tmpfs where there is one (as the spool is).
type streamDir struct {
	dir string
	n   int
}

func newStreamDir(t testing.TB) *streamDir {
	d, err := os.MkdirTemp("/dev/shm", "wasmhost-streams-")
	if err != nil {
		d = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	return &streamDir{dir: d}
}

// create makes a new empty file, open for writing.
func (d *streamDir) create(kind string) (*os.File, string, error) {
	d.n++
	name := kind + "-" + strconv.Itoa(d.n)
	f, err := os.OpenFile(d.path(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	return f, name, err
}

func (d *streamDir) path(name string) string { return d.dir + "/" + name }

func (d *streamDir) wasi() WASI {
	return WASI{Preopens: []Preopen{{HostDir: d.dir, GuestPath: "/.murmur-http", ForStreams: true}}}
}
