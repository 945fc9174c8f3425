package roost

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// inproc is the real handler behind a real loopback HTTP server in this
// process, so -race sees both sides.
type inproc struct {
	srv *Server
	*client
}

func newInproc(t testing.TB, opts Options) *inproc {
	t.Helper()
	srv, _, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return &inproc{srv: srv, client: &client{t: t, base: hs.URL, hc: hs.Client()}}
}

func TestApprovalExpiry(t *testing.T) {
	fx := newFixture(t)
	clk := &fakeClock{t: time.Now()}
	p := newInproc(t, Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16, SpawnAllow: []string{"local/orchestrator"},
		Registry: StoreRegistry(fx.reg)})
	p.srv.now = clk.now

	cred := p.mustRegister("ses_p", "local/orchestrator", "0.1.0", "")
	g1 := p.mustSpawn(cred, "local/worker-a", "0.1.0")
	if exp := int64(g1.body["expires_at_ms"].(float64)); exp != clk.now().Add(60*time.Second).UnixMilli() {
		t.Fatalf("expires_at_ms %d", exp)
	}
	clk.advance(30 * time.Second)
	g2 := p.mustSpawn(cred, "local/worker-b", "0.1.0")
	expectFigures(t, p.client, "ses_p", "running", 3, 2, 3)

	// Just before its 60 s: still reserved and redeemable.
	clk.advance(30*time.Second - time.Millisecond)
	expectFigures(t, p.client, "ses_p", "running", 3, 2, 3)
	// At 60 s the first expires: the slot comes back at the next read, with
	// no timer having run in between.
	clk.advance(time.Millisecond)
	if s := p.srv.Snapshot(); s.Pending != 1 || s.Census != 2 {
		t.Fatalf("after the first expiry: %+v", s)
	}
	expectFigures(t, p.client, "ses_p", "running", 3, 1, 2)
	expect(t, "expired", p.register("ses_c1", "local/worker-a", "0.1.0", g1.str("approval")), 403, msgApprovalExpired)

	// The second expires with nobody reading the census in between; the
	// redemption attempt itself sees it.
	clk.advance(30 * time.Second)
	expect(t, "expired unread", p.register("ses_c2", "local/worker-b", "0.1.0", g2.str("approval")), 403, msgApprovalExpired)
	expectFigures(t, p.client, "ses_p", "running", 3, 0, 1)

	// A redeemed approval's child stays counted past the 60 s.
	g3 := p.mustSpawn(cred, "local/worker-a", "0.1.0")
	p.mustRegister("ses_c3", "local/worker-a", "0.1.0", g3.str("approval"))
	clk.advance(10 * time.Minute)
	expectFigures(t, p.client, "ses_p", "running", 3, 1, 2)
	// Replaying it after its expiry reads as expired.
	expect(t, "replay after expiry", p.register("ses_c4", "local/worker-a", "0.1.0", g3.str("approval")), 403, msgApprovalExpired)

	// A daemon that has cycled many approvals refuses no more than a fresh one.
	for i := 0; i < 2000; i++ {
		p.mustSpawn(cred, "local/worker-b", "0.1.0")
		clk.advance(20 * time.Second)
	}
	clk.advance(time.Minute)
	if s := p.srv.Snapshot(); s.Census != 2 || s.Pending != 0 {
		t.Fatalf("after cycling: %+v", s)
	}
	p.srv.mu.Lock()
	n := len(p.srv.st.approvals)
	p.srv.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d approval records kept after their expiry", n)
	}
}

func TestHealthHead(t *testing.T) {
	p := newInproc(t, Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16})
	req, _ := http.NewRequest("HEAD", p.base+"/health", nil)
	resp, err := p.hc.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /health: %v %v", resp, err)
	}
	resp.Body.Close()
}
