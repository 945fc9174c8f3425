package wasihttp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// poolServer is a loopback server that counts the connections it accepted
// and fails the test if two requests are ever in flight on one connection.
type poolServer struct {
	*httptest.Server
	accepts atomic.Int64
	mu      sync.Mutex
	busy    map[string]bool
	shared  atomic.Int64
}

func newPoolServer(t *testing.T, hold time.Duration) *poolServer {
	s := &poolServer{busy: map[string]bool{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.busy[r.RemoteAddr] {
			s.shared.Add(1)
		}
		s.busy[r.RemoteAddr] = true
		s.mu.Unlock()
		time.Sleep(hold)
		s.mu.Lock()
		delete(s.busy, r.RemoteAddr)
		s.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.accepts.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *poolServer) host() string { u, _ := url.Parse(s.URL); return u.Host }

// runKinds are the ways a run's wasi:http goes: a capsule's that imports
// wasi:filesystem (bodies through spool files: httpopts.wat imports none, so
// its spool case is a SpoolOnly copy), a capsule's that does not, and a
// driver's (both Go streams, the body read from the socket by the guest's
// calls).
var runKinds = []runKind{{"capsule", false, true}, {"capsule-nofs", false, false}, {"driver", true, false}}

type runKind struct {
	name  string
	goIO  bool // RunConfig.GoIO as the caller sets it (capsule-nofs: by the rule, callerIO)
	spool bool
}

// fixture is the fixture name compiled for runs of k.
func (k runKind) fixture(t testing.TB, name string) *wasmhost.Component {
	if k.spool {
		return spoolFixture(t, name)
	}
	return fixture(t, name)
}

// fetchRun is one run of kind that makes one GET of /ok on the guest's
// thread.
func fetchRun(t *testing.T, k runKind, host string) {
	t.Helper()
	h := wasmhost.NewHost()
	Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
	i, err := instantiateFull(testEngine, context.Background(), k.fixture(t, "httpopts.wat"),
		wasmhost.RunConfig{GoIO: k.goIO, Host: h, Limits: wasmhost.Limits{Deadline: 20 * time.Second}})
	if err != nil {
		t.Error(err)
		return
	}
	defer i.Close()
	v, err := i.Call(bg, "", "fetch", host, "/ok", uint64(0), uint64(0))
	if err != nil || v != uint32(0) {
		t.Errorf("fetch = %v, %v; want 0", v, err)
	}
}

// TestConnKeptAcrossRuns: the connection a run's request used is taken by
// the next run's request to the same origin: ten runs, one accept.
func TestConnKeptAcrossRuns(t *testing.T) {
	for _, k := range runKinds {
		t.Run(k.name, func(t *testing.T) {
			s := newPoolServer(t, 0)
			for range 10 {
				fetchRun(t, k, s.host())
			}
			if n := s.accepts.Load(); n != 1 {
				t.Errorf("the server accepted %d connections for 10 runs, want 1 (kept across runs)", n)
			}
		})
	}
}

// TestConnKeptClosedByServer: a server that closed the kept connection
// between runs: the next run dials again and gets its answer.
func TestConnKeptClosedByServer(t *testing.T) {
	for _, k := range runKinds {
		t.Run(k.name, func(t *testing.T) {
			s := newPoolServer(t, 0)
			fetchRun(t, k, s.host())
			s.CloseClientConnections()
			// The close reaches the pooled socket asynchronously; wait for
			// it so the test checks the case it names.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if !pooledOK(s.host()) {
					break
				}
			}
			fetchRun(t, k, s.host())
			fetchRun(t, k, s.host())
			if n := s.accepts.Load(); n != 2 {
				t.Errorf("the server accepted %d connections, want 2 (one redial after its close)", n)
			}
		})
	}
}

// pooledOK reports whether the runs' pool holds a usable connection to
// host.
func pooledOK(host string) bool { return h1.DefaultPool.Usable(host) }

// TestConnNeverShared: runs in parallel to one origin never have two
// requests on one connection at once, and still reuse connections.
func TestConnNeverShared(t *testing.T) {
	s := newPoolServer(t, 2*time.Millisecond)
	const workers, each = 4, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				fetchRun(t, runKinds[w%len(runKinds)], s.host())
			}
		})
	}
	wg.Wait()
	if n := s.shared.Load(); n != 0 {
		t.Errorf("%d requests arrived on a connection another request was using", n)
	}
	if n := s.accepts.Load(); n > workers*each/2 {
		t.Errorf("%d accepts for %d runs: connections are not being kept", n, workers*each)
	}
}
