package wasihttp_test

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// TestVirtualAddresses: a component's GET of a callee's virtual address
// (http://worker.formation.invalid/…) reaches the callee's real door on
// loopback, path and query kept, carrying the edge's token and origin peer,
// though the component's own policy allows nothing; every other address
// under formation.invalid is refused with HTTP-request-denied and a log
// line before any connection is made. The guest is the C tool http-get-c
// (GET "<url> 1"); the grant is the one a member's script, tools and hooks
// get (wit.GrantHTTPMember over formation.Callees).
func TestVirtualAddresses(t *testing.T) {
	var (
		mu    sync.Mutex
		seen  []*http.Request
		conns atomic.Int64
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	l1 := &formation.Line1{Member: "lead", Calls: []formation.Call{{Name: "worker", Token: "mft1.edge-token"}}}
	line2 := `{"addresses":[{"name":"worker","url":"` + srv.URL + `"}]}` + "\n"
	callees := formation.NewCallees(l1, bufio.NewReader(strings.NewReader(line2)), nil)

	e, c := httpGetC(t)
	get := func(t *testing.T, url string) (wit.ToolResult, string) {
		t.Helper()
		var log bytes.Buffer
		h := wasmhost.NewHost()
		wit.GrantHTTPMember(h, callees, wit.DenyAllHTTP, slog.New(slog.NewTextHandler(&log, nil)), wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 4})
		inst, err := e.Instantiate(context.Background(), c, wasmhost.RunConfig{
			GoIO: true, Host: h,
			Limits: wasmhost.Limits{MemoryBytes: 64 << 20, TableElements: 100000, Instances: 100, Tables: 100, Memories: 100, Deadline: 30 * time.Second, Grace: time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close()
		data := url + " 1"
		res, err := wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: &data})
		if err != nil {
			t.Fatal(err)
		}
		return res, log.String()
	}
	summary := func(r wit.ToolResult) string {
		if r.Summary == nil {
			return ""
		}
		return *r.Summary
	}

	for _, url := range []string{"http://worker.formation.invalid/tasks/1?x=a%20b", "http://WORKER.Formation.Invalid:80/tasks/1?x=a%20b"} {
		t.Run("routed "+url, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			res, log := get(t, url)
			if res.Status != wit.StatusPassed || summary(res) != "bytes=2" || log != "" {
				t.Fatalf("status %s, summary %q, log %q", res.Status, summary(res), log)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 {
				t.Fatalf("%d requests arrived", len(seen))
			}
			r := seen[0]
			if r.URL.RequestURI() != "/tasks/1?x=a%20b" || r.Host != strings.TrimPrefix(srv.URL, "http://") ||
				r.Header.Values("Authorization")[0] != "Bearer mft1.edge-token" || len(r.Header.Values("Authorization")) != 1 ||
				r.Header.Get("x-murmur-task-origin") != "peer" {
				t.Fatalf("arrived: %s %s host %s headers %v", r.Method, r.URL.RequestURI(), r.Host, r.Header)
			}
		})
	}

	for _, c := range []struct{ url, reason string }{
		{"http://worker.formation.invalid:8080/", "its port is not 80"},
		{"https://worker.formation.invalid/", "its scheme is not http"},
		{"http://boss.formation.invalid/", "'boss' is not a member this capsule may call"},
		{"http://formation.invalid/", "it names no member"},
	} {
		t.Run("refused "+c.url, func(t *testing.T) {
			before := conns.Load()
			res, log := get(t, c.url)
			if res.Status == wit.StatusPassed || summary(res) != "HTTP-request-denied" {
				t.Fatalf("status %s, summary %q", res.Status, summary(res))
			}
			if !strings.Contains(log, `msg="`+wit.HTTPDenied+`"`) || !strings.Contains(log, "url="+c.url) || !strings.Contains(log, c.reason) {
				t.Fatalf("log %q", log)
			}
			if n := conns.Load() - before; n != 0 {
				t.Fatalf("%d connections for a refused request", n)
			}
		})
	}
	// Another host is the policy's: DenyAllHTTP refuses it as ever.
	if res, log := get(t, srv.URL+"/"); summary(res) != "HTTP-request-denied" || !strings.Contains(log, wit.ErrHTTPDenied.Error()) {
		t.Fatalf("the real address itself: %s %q %q", res.Status, summary(res), log)
	}
}
