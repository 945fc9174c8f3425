package roost

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDepthBound: a capsule whose spawn.allow names itself runs at four
// levels under --max-depth 3, and the fourth level's POST /spawn is refused.
func TestDepthBound(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/self")
	cred := d.mustRegister("ses_l0", "local/self", "0.1.0", "")
	for level := 1; level <= 3; level++ {
		g := d.mustSpawn(cred, "local/self", "0.1.0")
		sid := fmt.Sprintf("ses_l%d", level)
		cred = d.mustRegister(sid, "local/self", "0.1.0", g.str("approval"))
		expectFigures(t, d.client, sid, "running", 3-level, 0, level+1)
	}
	msg := "delegation depth bound reached: this daemon allows 3 levels of delegation below a top-level capsule (--max-depth 3), and this session has none left to spend — a capsule whose capabilities.spawn.allow names itself terminates here rather than recursing"
	expect(t, "fourth level spawn", d.spawn(cred, "local/self", "0.1.0"), 403, msg)
	expectFigures(t, d.client, "ses_l3", "running", 0, 0, 4)
	expectFigures(t, d.client, "ses_l0", "running", 3, 1, 4)
}

func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator", "--max-concurrent", "2")
	cred := d.mustRegister("ses_p", "local/orchestrator", "0.1.0", "")
	g1 := d.mustSpawn(cred, "local/worker-a", "0.1.0")
	d.mustSpawn(cred, "local/worker-b", "0.1.0") // an unlaunched approval holds a slot too
	msg := "delegation concurrency bound reached: this daemon allows a capsule 2 live children at a time (--max-concurrent 2), and this session already holds 2 — wait for one to finish, or raise --max-concurrent"
	expect(t, "third child", d.spawn(cred, "local/worker-a", "0.1.0"), 403, msg)
	expectFigures(t, d.client, "ses_p", "running", 3, 2, 3)
	// Redeeming keeps the count; the child's deregister gives the slot back.
	c1 := d.mustRegister("ses_c1", "local/worker-a", "0.1.0", g1.str("approval"))
	expect(t, "after redemption", d.spawn(cred, "local/worker-a", "0.1.0"), 403, msg)
	d.deregister(c1, "complete")
	expectFigures(t, d.client, "ses_p", "running", 3, 1, 2)
	d.mustSpawn(cred, "local/worker-a", "0.1.0")
	// Another top-level session has its own slots.
	cred2 := d.mustRegister("ses_q", "local/orchestrator", "0.1.0", "")
	d.mustSpawn(cred2, "local/worker-a", "0.1.0")
}

func TestCeilingBound(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator", "--max-live-capsules", "3")
	a := d.mustRegister("ses_a", "local/orchestrator", "0.1.0", "")
	b := d.mustRegister("ses_b", "local/orchestrator", "0.1.0", "")
	g := d.mustSpawn(a, "local/worker-a", "0.1.0")
	msg := "machine capsule ceiling reached: this daemon allows 3 live capsules on this host across every formation (--max-live-capsules 3), and it is already holding 3 — this is the host's ceiling rather than this capsule's own --max-concurrent, so narrowing the formation does not help; the same request may be granted once other capsules finish"
	// ses_b is well inside its own --max-concurrent, and refused: the host is full.
	expect(t, "spawn at the ceiling", d.spawn(b, "local/worker-a", "0.1.0"), 403, msg)
	// Redemption does not change the census.
	c := d.mustRegister("ses_c", "local/worker-a", "0.1.0", g.str("approval"))
	expect(t, "after redemption", d.spawn(b, "local/worker-a", "0.1.0"), 403, msg)
	// Top-level registrations count and are never refused by the ceiling.
	d.mustRegister("ses_d", "local/orchestrator", "0.1.0", "")
	d.mustRegister("ses_e", "local/orchestrator", "0.1.0", "")
	expectFigures(t, d.client, "ses_a", "running", 3, 1, 5)
	expect(t, "above the ceiling", d.spawn(b, "local/worker-a", "0.1.0"), 403,
		"machine capsule ceiling reached: this daemon allows 3 live capsules on this host across every formation (--max-live-capsules 3), and it is already holding 5 — this is the host's ceiling rather than this capsule's own --max-concurrent, so narrowing the formation does not help; the same request may be granted once other capsules finish")
	// Falling back under the ceiling admits the next delegated spawn.
	for _, cr := range []string{c, a} {
		d.deregister(cr, "complete")
	}
	expectFigures(t, d.client, "ses_b", "running", 3, 0, 3)
	expect(t, "at the ceiling again", d.spawn(b, "local/worker-a", "0.1.0"), 403, msg)
	d.deregister(b, "complete")
	expectFigures(t, d.client, "ses_d", "running", 3, 0, 2)
	f := d.mustRegister("ses_f", "local/orchestrator", "0.1.0", "")
	expect(t, "full again", d.spawn(f, "local/worker-a", "0.1.0"), 403, msg)
}

// TestBoundOrder: when several bounds apply, depth is heard first, then the
// ceiling, then concurrency; and every bound is asked before the registry
// is read (an unpublished capsule gets the bound's refusal, not a 500).
func TestBoundOrder(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	publish(t, fx.reg, "local/leaf", "0.1.0", "")
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator",
		"--spawn-allow", "local/leaf", "--max-concurrent", "1", "--max-live-capsules", "2", "--max-depth", "1")
	p := d.mustRegister("ses_p", "local/orchestrator", "0.1.0", "")
	d.mustSpawn(p, "local/worker-a", "0.1.0") // census 2 = ceiling; concurrency 1 = cap
	ceiling := msgCeiling(2, 2)
	expect(t, "ceiling before concurrency", d.spawn(p, "local/worker-b", "0.1.0"), 403, ceiling)
	// A name outside the allow list is refused before any bound.
	expect(t, "name before bounds", d.spawn(p, "local/leaf", "0.1.0"), 403, msgNotInParentAllow("local/leaf"))
	// Bounds before the registry: worker-a@9.9.9 is not published.
	expect(t, "bounds before resolve", d.spawn(p, "local/worker-a", "9.9.9"), 403, ceiling)

	// A depth-0 session at a full host hears the depth bound.
	d2 := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator", "--max-depth", "0", "--max-live-capsules", "0", "--max-concurrent", "0")
	q := d2.mustRegister("ses_q", "local/orchestrator", "0.1.0", "")
	expect(t, "depth first", d2.spawn(q, "local/worker-a", "0.1.0"), 403, msgDepth(0))
	expectFigures(t, d2.client, "ses_q", "running", 0, 0, 1)

	d3 := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator", "--max-live-capsules", "0", "--max-concurrent", "0")
	r := d3.mustRegister("ses_r", "local/orchestrator", "0.1.0", "")
	expect(t, "ceiling 0", d3.spawn(r, "local/worker-a", "0.1.0"), 403, msgCeiling(0, 1))

	d4 := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator", "--max-concurrent", "0")
	s := d4.mustRegister("ses_s", "local/orchestrator", "0.1.0", "")
	expect(t, "concurrency 0", d4.spawn(s, "local/worker-a", "0.1.0"), 403, msgConcurrency(0, 0))
	expectFigures(t, d4.client, "ses_s", "running", 3, 0, 1)
}

// TestRestart: everything is in memory. After a restart old session ids
// answer 404, old credentials and approvals get the identity refusal, and the
// ceiling resumes from the running directory.
func TestRestart(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	home := t.TempDir()
	args := []string{"--registry-path", fx.reg, "--spawn-allow", "local/orchestrator"}
	d := startDaemon(t, home, args...)
	cred := d.mustRegister("ses_old", "local/orchestrator", "0.1.0", "")
	g := d.mustSpawn(cred, "local/worker-a", "0.1.0")
	d.stop()

	d2 := startDaemon(t, home, args...)
	if r := d2.status("ses_old"); r.code != 404 || r.errMsg() != "session not found" {
		t.Fatalf("old session after restart: %d %s", r.code, r.raw)
	}
	expect(t, "old credential", d2.spawn(cred, "local/worker-a", "0.1.0"), 403, msgIdentity)
	expect(t, "old credential deregister", d2.deregister(cred, "complete"), 403, msgIdentity)
	expect(t, "old approval", d2.register("ses_child", "local/worker-a", "0.1.0", g.str("approval")), 403, msgIdentity)
	// The same session id may register again with the new daemon.
	d2.mustRegister("ses_old", "local/orchestrator", "0.1.0", "")
	expectFigures(t, d2.client, "ses_old", "running", 3, 0, 1)
}

// TestDefaultRegistryPath: without --registry-path the daemon resolves from
// $HOME/.murmur/artifacts.
func TestDefaultRegistryPath(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	reg := filepath.Join(home, ".murmur", "artifacts")
	publish(t, reg, "local/orchestrator", "0.1.0", "spawn:\n  allow: [local/worker-a]\n")
	publish(t, reg, "local/worker-a", "0.1.0", "")
	d := startDaemon(t, home, "--spawn-allow", "local/orchestrator")
	cred := d.mustRegister("ses_def", "local/orchestrator", "0.1.0", "")
	d.mustSpawn(cred, "local/worker-a", "0.1.0")
	if r := d.spawn(cred, "local/worker-a", "0.0.9"); r.code != 500 {
		t.Fatalf("unpublished version: %d %s", r.code, r.raw)
	}
}

// TestDepthBoundFastPathOff is TestDepthBound's scenario with the HTTP fast
// path switched off (MURMUR_ROOST_FASTPATH=0): net/http alone gives the same
// answers.
func TestDepthBoundFastPathOff(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemonCmd(t, t.TempDir(), func(args []string) *exec.Cmd {
		c := exec.Command(roostBin, args...)
		c.Env = []string{"MURMUR_ROOST_FASTPATH=0"}
		return c
	}, "--registry-path", fx.reg, "--spawn-allow", "local/self")
	cred := d.mustRegister("ses_l0", "local/self", "0.1.0", "")
	for level := 1; level <= 3; level++ {
		g := d.mustSpawn(cred, "local/self", "0.1.0")
		sid := fmt.Sprintf("ses_l%d", level)
		cred = d.mustRegister(sid, "local/self", "0.1.0", g.str("approval"))
		expectFigures(t, d.client, sid, "running", 3-level, 0, level+1)
	}
	msg := "delegation depth bound reached: this daemon allows 3 levels of delegation below a top-level capsule (--max-depth 3), and this session has none left to spend — a capsule whose capabilities.spawn.allow names itself terminates here rather than recursing"
	expect(t, "fourth level spawn", d.spawn(cred, "local/self", "0.1.0"), 403, msg)
	expectFigures(t, d.client, "ses_l3", "running", 0, 0, 4)
	if !strings.Contains(d.stderr.String(), "HTTP fast path off") {
		t.Fatalf("the daemon did not switch the fast path off; stderr:\n%s", d.stderr.String())
	}
}
