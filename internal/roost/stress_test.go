package roost

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkState verifies the daemon's books against each other: every running
// child is counted in its parent, every pending approval in its parent and in
// the census, and the running count matches the sessions.
func checkState(t testing.TB, srv *Server) {
	t.Helper()
	s := srv.ref
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	s.sweepLocked()
	children := map[*session]int{}
	running, pending := 0, 0
	for _, sess := range st.sessions {
		if sess.status == statusRunning {
			running++
			if sess.parent != nil {
				children[sess.parent]++
			}
		}
		pending += len(sess.pending)
		for a := range sess.pending {
			if !a.reserves() || a.parent != sess {
				t.Errorf("session %s holds approval in state %d of parent %s", sess.id, a.state, a.parent.id)
			}
		}
	}
	for _, sess := range st.sessions {
		if sess.children != children[sess] {
			t.Errorf("session %s counts %d running children, %d are", sess.id, sess.children, children[sess])
		}
	}
	if running != st.running || pending != st.pending {
		t.Errorf("state counts running=%d pending=%d, sessions hold running=%d pending=%d", st.running, st.pending, running, pending)
	}
}

// skewClock is real time plus an offset the test bumps, so approvals expire
// during a short run and expiry races redemption and the census.
type skewClock struct{ off atomic.Int64 }

func (c *skewClock) now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// TestStress: 64 concurrent clients spawn, redeem, replay, consume and
// deregister against one daemon for a few seconds, while the clock jumps
// past every approval's 60 seconds now and then. Throughout: no session ever
// holds more than --max-concurrent, the census never passes the ceiling
// through delegated spawns, no approval is redeemed twice, a child that
// registered always counts in its parent; at the end the figures return to
// their true values.
func TestStress(t *testing.T) {
	const (
		clients = 64
		maxConc = 3
		ceiling = 100
		runFor  = 3 * time.Second
	)
	fx := newFixture(t)
	p := newInproc(t, Options{MaxDepth: 3, MaxConcurrent: maxConc, MaxLiveCapsules: ceiling,
		SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg)})
	clk := &skewClock{}
	p.srv.ref.now = clk.now
	p.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}, Timeout: 30 * time.Second}

	// Every client's top-level session registers first, so the census's
	// top-level part is fixed (64) and every capsule above it was admitted
	// by a delegated spawn, which the ceiling bounds.
	creds := make([]string, clients)
	for i := range creds {
		creds[i] = p.mustRegister(fmt.Sprintf("ses_top_%02d", i), "local/orchestrator", "0.1.0", "")
	}

	var (
		granted, redeemed, replays, consumed, expired, refusedCeiling, refusedConc, deregs atomic.Int64
		seq, failures                                                                      atomic.Int64
		redeemMu                                                                           sync.Mutex
	)
	redeemedBy := map[string]string{} // approval -> the session that redeemed it
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}
	ceilingMsg := msgCeiling(ceiling, ceiling)
	deadline := time.Now().Add(runFor)
	stopBump := make(chan struct{})
	go func() { // every 700 ms, 61 seconds pass
		tk := time.NewTicker(700 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stopBump:
				return
			case <-tk.C:
				clk.off.Add(int64(61 * time.Second))
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			c := &client{t: t, base: p.base, hc: p.hc}
			me := fmt.Sprintf("ses_top_%02d", i)
			cred := creds[i]
			var children []string // credentials of running children
			var held []string     // approvals granted, not yet presented
			redeem := func(ap string) {
				sid := fmt.Sprintf("ses_child_%d", seq.Add(1))
				r := c.register(sid, "local/worker-a", "0.1.0", ap)
				switch {
				case r.code == 200:
					redeemed.Add(1)
					children = append(children, r.str("credential"))
					redeemMu.Lock()
					if prev, ok := redeemedBy[ap]; ok {
						fail("approval redeemed twice: by %s and %s", prev, sid)
					}
					redeemedBy[ap] = sid
					redeemMu.Unlock()
				case r.code == 403 && r.errMsg() == msgApprovalExpired:
					expired.Add(1)
					return
				default:
					fail("redeem: %d %s", r.code, r.raw)
					return
				}
				// A replay is refused whatever the session id.
				rr := c.register(fmt.Sprintf("ses_replay_%d", seq.Add(1)), "local/worker-a", "0.1.0", ap)
				if rr.code != 403 || (rr.errMsg() != msgApprovalReplayed && rr.errMsg() != msgApprovalExpired) {
					fail("replay: %d %s", rr.code, rr.raw)
				}
				replays.Add(1)
			}
			for time.Now().Before(deadline) {
				switch op := rng.IntN(10); {
				case op < 5:
					r := c.spawn(cred, "local/worker-a", "0.1.0")
					switch {
					case r.code == 200:
						granted.Add(1)
						switch k := rng.IntN(10); {
						case k < 6:
							redeem(r.str("approval"))
						case k < 8:
							// Presented for the wrong artifact: consumed, and
							// its slot held until the approval expires.
							rr := c.register(fmt.Sprintf("ses_wrong_%d", seq.Add(1)), "local/worker-a", "0.2.0", r.str("approval"))
							if rr.code != 403 || (rr.errMsg() != msgApprovalCoordinates("local/worker-a@0.1.0", "local/worker-a@0.2.0") && rr.errMsg() != msgApprovalExpired) {
								fail("consume: %d %s", rr.code, rr.raw)
							}
							consumed.Add(1)
						default:
							held = append(held, r.str("approval"))
						}
					case r.code == 403 && r.errMsg() == ceilingMsg:
						refusedCeiling.Add(1)
					case r.code == 403 && r.errMsg() == msgConcurrency(maxConc, maxConc):
						refusedConc.Add(1)
					default:
						fail("spawn: %d %s", r.code, r.raw) // includes a bound passed: "holding 151", "holds 4"
					}
				case op < 7 && len(held) > 0:
					ap := held[0]
					held = held[1:]
					redeem(ap)
				case op < 9 && len(children) > 0:
					k := rng.IntN(len(children))
					if r := c.deregister(children[k], []string{"complete", "failed"}[rng.IntN(2)]); r.code != 200 {
						fail("deregister: %d %s", r.code, r.raw)
					}
					deregs.Add(1)
					children = append(children[:k], children[k+1:]...)
				default:
					r := c.status(me)
					if lc := r.num("live_children"); r.code != 200 || lc > maxConc || lc < len(children) {
						fail("status %s: %s (holding %d running children)", me, r.raw, len(children))
					}
					if n := r.num("live_capsules"); n > ceiling || n < clients {
						fail("live_capsules %d outside [%d, %d]", n, clients, ceiling)
					}
				}
			}
			for _, ap := range held {
				redeem(ap)
			}
			for _, ch := range children {
				if r := c.deregister(ch, "complete"); r.code != 200 {
					fail("final deregister: %d %s", r.code, r.raw)
				}
			}
		}(i)
	}
	wg.Wait()
	close(stopBump)
	checkState(t, p.srv)
	// Every approval still reserving a slot expires 60 s after its grant.
	clk.off.Add(int64(61 * time.Second))
	for i := 0; i < clients; i++ {
		if r := p.status(fmt.Sprintf("ses_top_%02d", i)); r.num("live_children") != 0 || r.num("live_capsules") != clients {
			t.Fatalf("after the run: %s, want live_children 0 and live_capsules %d", r.raw, clients)
		}
	}
	if s := p.srv.Snapshot(); s.Running != clients || s.Pending != 0 {
		t.Fatalf("end state %+v", s)
	}
	checkState(t, p.srv)
	t.Logf("granted %d, redeemed %d, replays refused %d, consumed %d, expired before redemption %d, refused: ceiling %d, concurrency %d; deregistered %d",
		granted.Load(), redeemed.Load(), replays.Load(), consumed.Load(), expired.Load(), refusedCeiling.Load(), refusedConc.Load(), deregs.Load())
	if granted.Load() == 0 || redeemed.Load() == 0 || refusedConc.Load()+refusedCeiling.Load() == 0 {
		t.Fatalf("the stress run exercised too little")
	}
}
