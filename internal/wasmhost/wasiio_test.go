package wasmhost

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
)

const streamClosedU32 = ^uint32(0)

// goWritePermit is what Go's wasi:io grants a check-write (wasiio).
const goWritePermit = 64 << 10

func driverRun(t *testing.T, rc RunConfig) *Instance {
	t.Helper()
	rc.GoIO = true
	return instantiate(t, "wasiio.wat", rc)
}

// TestDriverIOStdin: a driver's stdin is a Go input-stream over the run's
// bytes; a read after the stream reported closed is closed again, as
// wasmtime's streams answer.
func TestDriverIOStdin(t *testing.T) {
	i := driverRun(t, RunConfig{WASI: WASI{Stdin: []byte("abcdef")}})
	for _, c := range []struct {
		n    uint64
		want uint32
	}{{4, 4}, {10, 2}, {10, streamClosedU32}, {10, streamClosedU32}} {
		if v, err := i.Call(bg, "", "read-stdin", c.n); err != nil || v != c.want {
			t.Fatalf("read-stdin(%d) = %v, %v; want %d", c.n, v, err, c.want)
		}
	}
}

// TestDriverIOStdinShared: every get-stdin handle reads the one stdin, as
// in wasmtime (a guest that takes a handle per read reads on, not again).
func TestDriverIOStdinShared(t *testing.T) {
	i := driverRun(t, RunConfig{WASI: WASI{Stdin: []byte("abcdef")}})
	for _, want := range []uint32{4, 2, streamClosedU32} {
		if v, err := i.Call(bg, "", "read-fresh-stdin", uint64(4)); err != nil || v != want {
			t.Fatalf("read-fresh-stdin(4) = %v, %v; want %d", v, err, want)
		}
	}
}

// TestDriverIOBadUse: what wasmtime traps on traps here too, naming it.
func TestDriverIOBadUse(t *testing.T) {
	cases := []struct {
		name string
		fn   string
		args []Value
		want string
	}{
		{"poll of an empty list", "poll-empty", nil, "empty poll list"},
		{"write past check-write's permit", "write", []Value{uint32(goWritePermit + 1)}, "more than the 65536 the stream permits"},
		{"blocking-write-and-flush past 4096 bytes", "bwf", []Value{uint32(4097)}, "more than the 4096 the stream permits"},
		{"a stream dropped under its pollable", "drop-parent", nil, "dropped while 1 resources made from it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := driverRun(t, RunConfig{})
			_, err := i.Call(bg, "", c.fn, c.args...)
			te := asTrap(t, err)
			if !strings.Contains(te.Message, c.want) {
				t.Fatalf("trap %q, want it to say %q", te.Message, c.want)
			}
		})
	}
}

// TestDriverIOStdout: writes within the permit reach the run's stdout file.
func TestDriverIOStdout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stdout.log")
	i := driverRun(t, RunConfig{WASI: WASI{StdoutPath: out}})
	if v, err := i.Call(bg, "", "check-write"); err != nil || v != uint64(goWritePermit) {
		t.Fatalf("check-write = %v, %v", v, err)
	}
	for _, fn := range []string{"write", "bwf"} {
		if v, err := i.Call(bg, "", fn, uint32(14)); err != nil || v != uint32(0) {
			t.Fatalf("%s = %v, %v", fn, v, err)
		}
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != "hello, stdout\nhello, stdout\n" {
		t.Fatalf("stdout %q, %v", got, err)
	}
}

// TestDriverIOClockAndDeadline: a Go timer pollable waits as long as asked,
// and a wait past the call's deadline ends the call there as a waiting
// DeadlineError naming the clock subscription.
func TestDriverIOClockAndDeadline(t *testing.T) {
	i := driverRun(t, RunConfig{Limits: Limits{Deadline: 2 * time.Second, Grace: 500 * time.Millisecond}})
	start := time.Now()
	if _, err := i.Call(bg, "", "sleep", uint64(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("a 50 ms sleep returned after %v", d)
	}
	if v, err := i.Call(bg, "", "poll-sleep", uint64(time.Hour)); err != nil || v != uint32(0) {
		t.Fatalf("poll of [stdin at its end, a 1 h timer] = %v, %v; want 0", v, err)
	}
	j := driverRun(t, RunConfig{Limits: Limits{Deadline: 300 * time.Millisecond}})
	_, err := j.Call(bg, "", "sleep", uint64(time.Hour))
	if de := asDeadline(t, err); !de.Waiting || de.Call != "wasi:clocks/monotonic-clock#subscribe-duration" {
		t.Fatalf("%#v", de)
	}
}

// TestDriverIOCancel: a cancelled call stops the guest's wait in Go, and
// ends as a cancellation, as an epoch stop would.
func TestDriverIOCancel(t *testing.T) {
	i := driverRun(t, RunConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := i.Call(ctx, "", "sleep", uint64(time.Hour))
	var ce *CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait ended with %T: %v", err, err)
	}
}

// TestDriverIOResources: a dropped pollable frees its Go state (and the
// handles lifted for its calls), and the cap on a run's host resources
// applies to Go streams and pollables as to wasi:http's.
func TestDriverIOResources(t *testing.T) {
	i := driverRun(t, RunConfig{})
	if _, err := i.Call(bg, "", "churn", uint32(10_000)); err != nil {
		t.Fatal(err)
	}
	if n, m := len(i.run.objs), len(i.run.resources); n > 2 || m > 2 {
		t.Fatalf("after 10,000 dropped pollables the run holds %d objects and %d handles", n, m)
	}
	defer func(n int) { maxHostObjects = n }(maxHostObjects)
	maxHostObjects = 1000
	_, err := i.Call(bg, "", "subscribe", uint32(2000))
	if te := asTrap(t, err); !strings.Contains(te.Message, "the host allows 1000") {
		t.Fatalf("trap %q", te.Message)
	}
}

// TestDriverIONoFilesystemNoSockets: a driver has no descriptors and no
// network; the refusals are typed as the guest's own WIT says.
func TestDriverIONoFilesystemNoSockets(t *testing.T) {
	i := driverRun(t, RunConfig{})
	if v, err := i.Call(bg, "", "preopens"); err != nil || v != uint32(0) {
		t.Fatalf("preopens = %v, %v", v, err)
	}
	if v, err := i.Call(bg, "", "resolve"); err != nil || v != uint32(2) { // 1 + access-denied
		t.Fatalf("resolve = %v, %v; want access-denied", v, err)
	}
	_, err := instantiateFull(testEngine, bg, fixture(t, "wasiio.wat"),
		RunConfig{GoIO: true, WASI: WASI{Preopens: []Preopen{{HostDir: t.TempDir(), GuestPath: "/w"}}}})
	var d *diag.Diagnostic
	if !errors.As(err, &d) || d.Code != "E-RUN-104" {
		t.Fatalf("a driver run with a preopen: %v", err)
	}
}

// TestRunKindsLinkApart: one component, run as a capsule (wasip2) and as a
// driver (Go wasi:io): each kind gets its own linker, and both read stdin.
func TestRunKindsLinkApart(t *testing.T) {
	for _, goIO := range []bool{false, true, false} {
		i := instantiate(t, "wasiio.wat", RunConfig{GoIO: goIO, WASI: WASI{Stdin: []byte("xyz")}})
		if v, err := i.Call(bg, "", "read-stdin", uint64(8)); err != nil || v != uint32(3) {
			t.Fatalf("GoIO %v: read-stdin = %v, %v", goIO, v, err)
		}
		if i.run.goIO != goIO {
			t.Fatalf("GoIO %v: Go wasi:io %v", goIO, i.run.goIO)
		}
	}
}

// TestDriverHTTPNoHostLeak: 1,000 requests whose handles a driver run never
// drops leave no descriptors or goroutines once the instance is closed.
func TestDriverHTTPNoHostLeak(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	countFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip(err)
		}
		return len(ents)
	}
	fds0, g0 := countFDs(), runtime.NumGoroutine()
	h := NewHost()
	h.HTTP(HTTPGrant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 16})
	i, err := instantiateFull(testEngine, context.Background(), fixture(t, "httpleak.wat"), RunConfig{GoIO: true, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	if !i.run.http.live {
		t.Fatal("the driver run's wasi:http is not on Go streams")
	}
	v, err := i.Call(bg, "", "requests", uint32(1000), u.Host)
	if err != nil || v != uint32(1000) {
		t.Fatalf("requests = %v, %v; want 1000 accepted", v, err)
	}
	i.Close()
	srv.CloseClientConnections()
	var fds, g int
	for range 100 {
		if fds, g = countFDs(), runtime.NumGoroutine(); fds <= fds0+2 && g <= g0+2 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("after close: %d fds (before %d), %d goroutines (before %d)", fds, fds0, g, g0)
}

// TestLiveBodyPump: a driver's response body reaches its Go stream as the
// server sends it, never more than the stream's buffer ahead of the
// reader, and a body past the bound ends with HTTP-response-body-size after
// the bytes within it.
func TestLiveBodyPump(t *testing.T) {
	const size = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 16<<10)
		for i := range chunk {
			chunk[i] = byte(i)
		}
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		name string
		max  int64
		want string // the ending's error-code, "" for a clean end
	}{
		{"within the bound", size, ""},
		{"past the bound", 100_000, "HTTP-response-body-size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := newGoInput(64 << 10)
			done := make(chan Value, 1)
			go func() {
				end := pumpBody(ctx, resp, s, c.max, 0, cancel)
				s.finish(end)
				done <- end
			}()
			var got int64
			for {
				b, ending, ok := s.Take(8 << 10)
				if !ok {
					if v, _ := ending.(Variant); v.Case != c.want || (c.want == "") != (ending == nil) {
						t.Fatalf("ending %v, want %q", ending, c.want)
					}
					break
				}
				got += int64(len(b))
				s.mu.Lock()
				if len(s.buf) > s.max {
					t.Errorf("the stream holds %d bytes, more than its %d", len(s.buf), s.max)
				}
				s.mu.Unlock()
				if len(b) == 0 {
					ready, wake, _ := s.state()
					if !ready {
						<-wake
					}
				}
			}
			if want := min(c.max, size); got != want {
				t.Fatalf("read %d bytes, want %d", got, want)
			}
			<-done
		})
	}
}
