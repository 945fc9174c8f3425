package roost

import (
	"bufio"
	"encoding/base64"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/store"
)

// fixture publishes the capsules most tests use into a fresh registry.
type fixture struct {
	reg       string
	workerSHA string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	reg := t.TempDir()
	publish(t, reg, "local/orchestrator", "0.1.0", "spawn:\n  allow: [local/worker-a, local/worker-b, local/wide, local/self]\nnetwork:\n  allow: [example.com]\n")
	sha := publish(t, reg, "local/worker-a", "0.1.0", "network:\n  allow: [https://example.com]\n")
	publish(t, reg, "local/worker-a", "0.2.0", "")
	publish(t, reg, "local/worker-b", "0.1.0", "")
	publish(t, reg, "local/wide", "0.1.0", "network:\n  allow: [api.example.com]\n")
	publish(t, reg, "local/self", "0.1.0", "spawn:\n  allow: [local/self]\n")
	return fixture{reg: reg, workerSHA: sha}
}

func TestEndpointsWalk(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg,
		"--spawn-allow", "local/orchestrator", "--spawn-allow=local/self", "--spawn-allow", "local/missing")

	// GET /health.
	if r := d.do("GET", "/health", nil, nil); r.code != 200 || r.raw != "{}" {
		t.Fatalf("health: %d %q", r.code, r.raw)
	}

	// POST /register, top-level path.
	expect(t, "register not in --spawn-allow", d.register("ses_1", "local/worker-a", "0.1.0", ""), 403, msgNotInSpawnAllow("local/worker-a"))
	expect(t, "register unpublished, not in --spawn-allow", d.register("ses_1", "local/nowhere", "0.1.0", ""), 403, msgNotInSpawnAllow("local/nowhere"))
	if r := d.register("ses_1", "local/missing", "0.1.0", ""); r.code != 500 || r.errMsg() == "" {
		t.Fatalf("register allowed but unpublished: %d %s", r.code, r.raw)
	}
	for _, tc := range []struct{ what, body string }{
		{"not JSON", "{"},
		{"not an object", `["session_id"]`},
		{"empty body", ""},
		{"empty session_id", `{"session_id": "", "name": "local/orchestrator", "version": "0.1.0"}`},
		{"missing session_id", `{"name": "local/orchestrator", "version": "0.1.0"}`},
		{"bare name", `{"session_id": "ses_x", "name": "orchestrator", "version": "0.1.0"}`},
		{"upper-case name", `{"session_id": "ses_x", "name": "Local/orchestrator", "version": "0.1.0"}`},
		{"name not a string", `{"session_id": "ses_x", "name": 7, "version": "0.1.0"}`},
		{"missing version", `{"session_id": "ses_x", "name": "local/orchestrator"}`},
	} {
		if r := d.do("POST", "/register", nil, tc.body); r.code != 400 || r.errMsg() == "" {
			t.Errorf("register %s: %d %s", tc.what, r.code, r.raw)
		}
	}
	// Extra keys are ignored, a capabilities block included; keys match exactly.
	d.runningRecord("ses_top")
	r := d.do("POST", "/register", nil, `{"session_id": "ses_top", "name": "local/orchestrator", "version": "0.1.0",
		"capabilities": {"network": {"allow": ["*"]}}, "envelope": {}, "NAME": "local/worker-a", "depth": 99}`)
	if r.code != 200 || !strings.HasPrefix(r.str("credential"), "msc1.eyJ2IjoxLCJz") || len(r.body) != 1 {
		t.Fatalf("register top-level: %d %s", r.code, r.raw)
	}
	cred := r.str("credential")
	expectFigures(t, d.client, "ses_top", "running", 3, 0, 1)
	// session_id already registered: the identity refusal.
	expect(t, "register taken session_id", d.register("ses_top", "local/orchestrator", "0.1.0", ""), 403, msgIdentity)

	// POST /spawn.
	for _, tc := range []struct{ what, body string }{
		{"not JSON", "nope"},
		{"missing name", `{"version": "0.1.0"}`},
		{"missing version", `{"name": "local/worker-a"}`},
		{"not a full name", `{"name": "worker-a", "version": "0.1.0"}`},
		{"null name", `{"name": null, "version": "0.1.0"}`},
	} {
		// The body is checked before the credential.
		if r := d.do("POST", "/spawn", nil, tc.body); r.code != 400 || r.errMsg() == "" {
			t.Errorf("spawn %s: %d %s", tc.what, r.code, r.raw)
		}
	}
	expect(t, "spawn without credential", d.do("POST", "/spawn", nil, map[string]string{"name": "local/worker-a", "version": "0.1.0"}), 403, msgIdentity)
	for _, bad := range []string{"", "msc1.", "msc1.e30.AAAA", "garbage", cred + "x", "x" + cred, strings.Replace(cred, "msc1.", "msa1.", 1), tamper(cred)} {
		expect(t, "spawn with credential "+bad, d.spawn(bad, "local/worker-a", "0.1.0"), 403, msgIdentity)
	}
	expect(t, "spawn for a name outside spawn.allow", d.spawn(cred, "local/orchestrator", "0.1.0"), 403, msgNotInParentAllow("local/orchestrator"))
	if r := d.spawn(cred, "local/worker-a", "9.9.9"); r.code != 500 {
		t.Fatalf("spawn unpublished version: %d %s", r.code, r.raw)
	}
	expect(t, "spawn beyond the envelope", d.spawn(cred, "local/wide", "0.1.0"), 403,
		"capabilities.network.allow: the child declares 'api.example.com', which its parent does not hold — a spawned capsule can never hold more capability than the capsule that spawned it")
	expectFigures(t, d.client, "ses_top", "running", 3, 0, 1) // refusals leave no trace

	t0 := time.Now().UnixMilli()
	g := d.mustSpawn(cred, "local/worker-a", "0.1.0")
	t1 := time.Now().UnixMilli()
	if g.str("name") != "local/worker-a" || g.str("version") != "0.1.0" || g.str("sha256") != fx.workerSHA ||
		!strings.HasPrefix(g.str("approval"), "msa1.eyJ2IjoxLCJz") || len(g.body) != 5 {
		t.Fatalf("spawn grant: %s", g.raw)
	}
	if exp := int64(g.body["expires_at_ms"].(float64)); exp < t0+60000 || exp > t1+60000 {
		t.Fatalf("expires_at_ms %d not 60 s after [%d, %d]", exp, t0, t1)
	}
	expectFigures(t, d.client, "ses_top", "running", 3, 1, 2)

	// The approval is not a credential, nor the credential an approval.
	expect(t, "approval as credential", d.spawn(g.str("approval"), "local/worker-a", "0.1.0"), 403, msgIdentity)
	expect(t, "credential as approval", d.register("ses_c", "local/worker-a", "0.1.0", cred), 403, msgIdentity)
	expect(t, "tampered approval", d.register("ses_c", "local/worker-a", "0.1.0", tamper(g.str("approval"))), 403, msgIdentity)
	// An approval that does not verify is refused, never judged by --spawn-allow.
	expect(t, "bad approval for an allowed name", d.register("ses_c", "local/orchestrator", "0.1.0", "msa1.nope"), 403, msgIdentity)
	// With an approval the registry is read first: an unresolvable name is a
	// 500 and the approval is untouched.
	if r := d.register("ses_c", "local/worker-a", "7.7.7", g.str("approval")); r.code != 500 {
		t.Fatalf("register with approval, unresolvable: %d %s", r.code, r.raw)
	}

	// Redeem.
	childCred := d.mustRegister("ses_child", "local/worker-a", "0.1.0", g.str("approval"))
	expectFigures(t, d.client, "ses_top", "running", 3, 1, 2)
	expectFigures(t, d.client, "ses_child", "running", 2, 0, 2)
	expect(t, "replay", d.register("ses_child2", "local/worker-a", "0.1.0", g.str("approval")), 403, msgApprovalReplayed)

	// Different coordinates: presenting it consumes it.
	g2 := d.mustSpawn(cred, "local/worker-a", "0.1.0")
	expect(t, "other version", d.register("ses_c2", "local/worker-a", "0.2.0", g2.str("approval")), 403,
		"this spawn approval was granted for 'local/worker-a@0.1.0', not 'local/worker-a@0.2.0'")
	expect(t, "other name", d.register("ses_c2", "local/worker-b", "0.1.0", g2.str("approval")), 403, msgApprovalReplayed)
	expect(t, "right artifact after consumption", d.register("ses_c2", "local/worker-a", "0.1.0", g2.str("approval")), 403, msgApprovalReplayed)
	// A consumed approval keeps its slot until its expiry ("whether or not
	// anybody ever presented it"): the child plus g2.
	expectFigures(t, d.client, "ses_top", "running", 3, 2, 3)

	// Different bytes: the same coordinates republished between grant and launch.
	g3 := d.mustSpawn(cred, "local/worker-a", "0.1.0")
	newSHA := publish(t, fx.reg, "local/worker-a", "0.1.0", "network:\n  allow: [https://example.com]\n", 1, 2, 3)
	expect(t, "other bytes", d.register("ses_c3", "local/worker-a", "0.1.0", g3.str("approval")), 403,
		"'local/worker-a@0.1.0' now resolves to a different artifact than the one this spawn approval was granted for (approved sha256 "+fx.workerSHA+", resolved sha256 "+newSHA+")")

	// A taken session_id with a valid approval: identity refusal.
	g4 := d.mustSpawn(cred, "local/worker-b", "0.1.0")
	expect(t, "approval with a taken session_id", d.register("ses_child", "local/worker-b", "0.1.0", g4.str("approval")), 403, msgIdentity)

	// POST /deregister.
	for _, body := range []string{"{", `{}`, `{"outcome": "done"}`, `{"outcome": "COMPLETE"}`, `{"outcome": 1}`} {
		if r := d.do("POST", "/deregister", map[string]string{HeaderCredential: childCred}, body); r.code != 400 {
			t.Errorf("deregister %s: %d %s", body, r.code, r.raw)
		}
	}
	expect(t, "deregister without credential", d.do("POST", "/deregister", nil, `{"outcome": "complete"}`), 403, msgIdentity)
	if r := d.deregister(childCred, "failed"); r.code != 200 || r.raw != "{}" {
		t.Fatalf("deregister: %d %q", r.code, r.raw)
	}
	// Left: ses_top and the three consumed approvals g2, g3, g4.
	expectFigures(t, d.client, "ses_child", "failed", 2, 0, 4)
	expectFigures(t, d.client, "ses_top", "running", 3, 3, 4)
	expect(t, "deregister twice", d.deregister(childCred, "complete"), 403, msgIdentity)
	expect(t, "spawn after deregister", d.spawn(childCred, "local/worker-a", "0.1.0"), 403, msgIdentity)

	// A parent's deregister releases its reservations, and its approvals can
	// no longer be redeemed (identity refusal: the granting session ended).
	g5 := d.mustSpawn(cred, "local/worker-b", "0.1.0")
	expectFigures(t, d.client, "ses_top", "running", 3, 4, 5)
	expect(t, "consumed approvals hold their slots", d.spawn(cred, "local/worker-b", "0.1.0"), 403, msgConcurrency(4, 4))
	if r := d.deregister(cred, "complete"); r.code != 200 {
		t.Fatalf("deregister top: %d %s", r.code, r.raw)
	}
	expectFigures(t, d.client, "ses_top", "complete", 3, 0, 0)
	expect(t, "approval of an ended parent", d.register("ses_c5", "local/worker-b", "0.1.0", g5.str("approval")), 403, msgIdentity)

	// GET /status of an unknown session.
	for _, id := range []string{"ses_nobody", "", "a/b"} {
		r := d.status(id)
		if r.code != 404 || r.raw != `{"error": "session not found"}` {
			t.Errorf("status %q: %d %q", id, r.code, r.raw)
		}
	}
	// Wrong methods and paths.
	if r := d.do("GET", "/spawn", nil, nil); r.code != 405 {
		t.Errorf("GET /spawn: %d", r.code)
	}
	if r := d.do("POST", "/health", nil, "{}"); r.code != 405 {
		t.Errorf("POST /health: %d", r.code)
	}
	if r := d.do("GET", "/nowhere", nil, nil); r.code != 404 {
		t.Errorf("GET /nowhere: %d", r.code)
	}
	// A body over 64 KiB is a 400.
	big := `{"name": "local/worker-a", "version": "0.1.0", "pad": "` + strings.Repeat("x", 70<<10) + `"}`
	if r := d.do("POST", "/spawn", map[string]string{HeaderCredential: cred}, big); r.code != 400 {
		t.Errorf("oversized body: %d %s", r.code, r.raw)
	}
	if strings.Contains(d.stderr.String(), "msc1.") || strings.Contains(d.stderr.String(), "msa1.") {
		t.Fatalf("a token reached the daemon's stderr: %s", d.stderr.String())
	}
}

// tamper flips one character of a token's payload, keeping its form.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return tok + "A"
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return tok + "A"
	}
	body = []byte(strings.Replace(string(body), `"v":1`, `"v":1,"d":9`, 1))
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + parts[2]
}

// TestNoProviderCredential: a registry of capsules whose gateway keys name
// ${ANTHROPIC_API_KEY} resolves, registers and spawns in a daemon started
// with HOME alone in its environment.
func TestNoProviderCredential(t *testing.T) {
	t.Parallel()
	reg := t.TempDir()
	gw := "artifacts:\n  - name: murmur/driver-anthropic\n    version: \"0.19.0\"\n    runtime: driver\n    gateway:\n      endpoint: https://api.anthropic.com\n      api_key: ${ANTHROPIC_API_KEY}\n"
	for _, c := range []struct{ name, caps string }{
		{"local/keyed-parent", "spawn:\n  allow: [local/keyed-child]\n"},
		{"local/keyed-child", ""},
	} {
		y := capsuleYAML(c.name, "0.1.0", c.caps, gw)
		if _, err := store.At(reg).Publish(zipOf(t, map[string][]byte{"murmur.yaml": []byte(y)}), false); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(roostBin, "--port", "0", "--registry-path", reg, "--spawn-allow", "local/keyed-parent")
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home}
	out, _ := cmd.StdoutPipe()
	var se syncBuffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var addr string
	for i := 0; i < 3 && sc.Scan(); i++ {
		if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no listening line; stderr %s", se.String())
	}
	c := &client{t: t, base: "http://" + addr, hc: &http.Client{Timeout: 10 * time.Second}}
	cred := c.mustRegister("ses_k", "local/keyed-parent", "0.1.0", "")
	g := c.mustSpawn(cred, "local/keyed-child", "0.1.0")
	c.mustRegister("ses_kc", "local/keyed-child", "0.1.0", g.str("approval"))
}

// TestSlowClient: a client that never finishes its request header is cut
// off by the header timeout, and others are answered meanwhile.
func TestSlowClient(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, t.TempDir())
	conn, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("POST /spawn HTTP/1.1\r\nHost: x\r\n"))
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		if r := d.do("GET", "/health", nil, nil); r.code != 200 {
			t.Fatalf("health while a client stalls: %d", r.code)
		}
		if time.Since(t0) > 3*time.Second {
			t.Fatalf("a stalled client held up another for %v", time.Since(t0))
		}
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	t0 := time.Now()
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	for err == nil && n > 0 { // the server may answer 408 before closing
		n, err = conn.Read(buf)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the stalled connection was still open after %v", time.Since(t0))
	}
}
