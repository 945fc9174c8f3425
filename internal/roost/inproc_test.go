package roost

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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
	return &inproc{srv: srv, client: &client{t: t, base: hs.URL, hc: hs.Client(), running: opts.RunningDir}}
}

func TestApprovalExpiry(t *testing.T) {
	fx := newFixture(t)
	clk := &fakeClock{t: time.Now()}
	p := newInproc(t, Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16, SpawnAllow: []string{"local/orchestrator"},
		Registry: StoreRegistry(fx.reg)})
	p.srv.ref.now = clk.now

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

	// A consumed approval (presented for the wrong artifact) keeps its slot
	// until its 60 seconds pass, then gives it back.
	g5 := p.mustSpawn(cred, "local/worker-a", "0.1.0")
	expect(t, "consume", p.register("ses_c5", "local/worker-a", "0.2.0", g5.str("approval")), 403,
		msgApprovalCoordinates("local/worker-a@0.1.0", "local/worker-a@0.2.0"))
	clk.advance(59 * time.Second)
	expectFigures(t, p.client, "ses_p", "running", 3, 2, 3)
	clk.advance(time.Second)
	expectFigures(t, p.client, "ses_p", "running", 3, 1, 2)

	// A daemon that has cycled many approvals refuses no more than a fresh one.
	for i := 0; i < 2000; i++ {
		p.mustSpawn(cred, "local/worker-b", "0.1.0")
		clk.advance(20 * time.Second)
	}
	clk.advance(time.Minute)
	if s := p.srv.Snapshot(); s.Census != 2 || s.Pending != 0 {
		t.Fatalf("after cycling: %+v", s)
	}
	p.srv.ref.mu.Lock()
	n := len(p.srv.ref.st.approvals)
	p.srv.ref.mu.Unlock()
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

// TestRunInProcess runs the daemon's whole start-up and shutdown in this
// process (so -race sees it): three lines, a request, then a clean exit 0
// when its context ends.
func TestRunInProcess(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--port", "0", "--max-live-capsules", "5"}, pw, &stderr)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < 3 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	go io.Copy(io.Discard, pr)
	if len(lines) != 3 || !censusRE.MatchString(lines[0]) || lines[2] != "mur-roost: machine ceiling 5 live capsules (--max-live-capsules)" {
		t.Fatalf("lines %q, stderr %q", lines, stderr.String())
	}
	m := listenRE.FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("listening line %q", lines[1])
	}
	resp, err := http.Get("http://" + m[1] + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	// A port already taken: exit 1 after the census line.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	var out, errb bytes.Buffer
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if code := run(context.Background(), []string{"--port", port}, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "mur-roost: cannot listen on 127.0.0.1:"+port+": ") {
		t.Fatalf("taken port: exit %d stderr %q", code, errb.String())
	}
}
