package wasihttp_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
	"github.com/murmur-go/murmur/internal/wit"
)

// TestExchangeMatrix holds both of wasi:http's exchanges to the same
// answers over every way a body reaches a guest (RATIONALE.md, "The
// exchange matrix, decided"): {spool, Go streams} × {the guest's thread,
// the transport} × {a declared body of at most 64 KiB (read where the
// head is), a larger declared one, a chunked one}. The guest is the C
// tool http-get-c, which makes n GETs and sums the bytes it read; each
// cell's three requests must arrive whole on one kept connection (a body
// read to its end gives its connection back).
// httpGetC compiles the C tool http-get-c (tool-input.data "<url> <n>":
// n GETs of url) on the shared engine, closed when t ends.
func httpGetC(t *testing.T) (*wasmhost.Engine, *wasmhost.Component) {
	t.Helper()
	src, err := os.ReadFile("../../../testdata/components/http-get-c/http-get-c.wasm")
	if err != nil {
		t.Fatal(err)
	}
	e := wasihttp.SharedEngine()
	c, err := e.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return e, c
}

func TestExchangeMatrix(t *testing.T) {
	const small, large, chunked = 60 << 10, 300 << 10, 192 << 10
	body := []byte(strings.Repeat("0123456789abcdef", large/16))
	var accepts atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			w.Header().Set("Content-Length", strconv.Itoa(small))
			w.Write(body[:small])
		case "/large":
			w.Header().Set("Content-Length", strconv.Itoa(large))
			w.Write(body[:large])
		case "/chunked":
			for off := 0; off < chunked; off += 16 << 10 {
				w.Write(body[off : off+16<<10])
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepts.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	e, c := httpGetC(t)

	const n = 3
	for _, bodies := range []struct {
		name string
		goIO bool
	}{{"spool", false}, {"Go streams", true}} {
		for _, onThread := range []bool{true, false} {
			for _, size := range []struct {
				path string
				n    int
			}{{"/small", small}, {"/large", large}, {"/chunked", chunked}} {
				name := bodies.name + "/" + map[bool]string{true: "guest's thread", false: "transport"}[onThread] + size.path
				t.Run(name, func(t *testing.T) {
					defer wasihttp.SetSyncExchanges(onThread)()
					h1.DefaultPool.CloseIdle()
					accepts.Store(0)
					h := wasmhost.NewHost()
					wasihttp.Enable(h, wasihttp.Grant{
						Decide:       func(context.Context, *wasihttp.Request) error { return nil },
						MaxBodyBytes: 1 << 20, MaxInFlight: 4,
					})
					inst, err := e.Instantiate(context.Background(), c, wasmhost.RunConfig{
						GoIO:   bodies.goIO,
						Host:   h,
						Limits: wasmhost.Limits{MemoryBytes: 64 << 20, TableElements: 100000, Instances: 100, Tables: 100, Memories: 100, Deadline: 30 * time.Second, Grace: time.Second},
					})
					if err != nil {
						t.Fatal(err)
					}
					defer inst.Close()
					data := srv.URL + size.path + " " + strconv.Itoa(n)
					res, err := wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: &data})
					if err != nil {
						t.Fatal(err)
					}
					want := "bytes=" + strconv.Itoa(n*size.n)
					if res.Status != wit.StatusPassed || res.Summary == nil || *res.Summary != want {
						got := "<nil>"
						if res.Summary != nil {
							got = *res.Summary
						}
						t.Fatalf("status %s, summary %q; want passed, %q", res.Status, got, want)
					}
					if a := accepts.Load(); a != 1 {
						t.Errorf("%d connections for %d requests, want 1 (each body read to its end)", a, n)
					}
				})
			}
		}
	}
}
