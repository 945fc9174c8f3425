package roost

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/store"
)

// These tests walk the edges a conformance suite written from the text alone
// would try, against the real binary: bodies of the wrong shape, headers with
// surrounding whitespace or given twice, methods an endpoint does not take,
// and the flag readings docs/roost.md lists under "Readings".

// rawExchange writes req on a fresh connection and returns the whole reply.
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(bufio.NewReader(c))
	return string(b)
}

func TestBodyEdges(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator")
	cred := d.mustRegister("ses_top", "local/orchestrator", "0.1.0", "")
	H := map[string]string{HeaderCredential: cred}

	// Every one of these is a 400 with an {"error": ...} body, checked before
	// the credential (so also without one), and leaves no trace.
	for _, tc := range []struct{ what, body string }{
		{"null", "null"},
		{"empty object", "{}"},
		{"array", `[{"name": "local/worker-a", "version": "0.1.0"}]`},
		{"string", `"local/worker-a"`},
		{"number name", `{"name": 1, "version": "0.1.0"}`},
		{"object name", `{"name": {"scope": "local"}, "version": "0.1.0"}`},
		{"number version", `{"name": "local/worker-a", "version": 1}`},
		{"missing version", `{"name": "local/worker-a"}`},
		{"empty version", `{"name": "local/worker-a", "version": ""}`},
		{"null version", `{"name": "local/worker-a", "version": null}`},
		{"name without a scope", `{"name": "worker-a", "version": "0.1.0"}`},
		{"name with an empty scope", `{"name": "/worker-a", "version": "0.1.0"}`},
		{"name with three parts", `{"name": "local/worker/a", "version": "0.1.0"}`},
		{"name with spaces", `{"name": " local/worker-a", "version": "0.1.0"}`},
		{"trailing garbage", `{"name": "local/worker-a", "version": "0.1.0"} x`},
		{"two objects", `{"name": "local/worker-a", "version": "0.1.0"}{}`},
		{"byte order mark", "\ufeff" + `{"name": "local/worker-a", "version": "0.1.0"}`},
		{"truncated", `{"name": "local/worker-a", "version": "0.1.0"`},
	} {
		for _, hdr := range []map[string]string{H, nil} {
			r := d.do("POST", "/spawn", hdr, tc.body)
			if r.code != 400 || r.errMsg() == "" || len(r.body) != 1 {
				t.Errorf("spawn %s (credential %v): %d %s", tc.what, hdr != nil, r.code, r.raw)
			}
		}
	}
	expectFigures(t, d.client, "ses_top", "running", 3, 0, 1)

	// A duplicated key: the last one wins (encoding/json's reading).
	if r := d.do("POST", "/spawn", H, `{"name": "local/nowhere", "name": "local/worker-a", "version": "0.1.0"}`); r.code != 200 || r.str("name") != "local/worker-a" {
		t.Fatalf("duplicated key: %d %s", r.code, r.raw)
	}
	// White space around the JSON is not garbage.
	if r := d.do("POST", "/spawn", H, "\n\t "+`{"name": "local/worker-b", "version": "0.1.0"}`+" \r\n"); r.code != 200 {
		t.Fatalf("white space around the body: %d %s", r.code, r.raw)
	}
	// A version that is not a version is the registry's business: it resolves
	// to nothing (500), and nothing outside the registry is read.
	for _, v := range []string{"../../../etc", "latest", "0.1.0/../0.1.0", " 0.1.0"} {
		if r := d.spawn(cred, "local/worker-a", v); r.code != 500 || r.errMsg() == "" {
			t.Errorf("spawn version %q: %d %s", v, r.code, r.raw)
		}
	}
	expectFigures(t, d.client, "ses_top", "running", 3, 2, 3)

	// The 64 KiB cap: a body of exactly 64 KiB is read, one byte more is a 400.
	head := `{"name": "local/worker-a", "version": "0.1.0", "pad": "`
	exact := head + strings.Repeat("x", MaxBodyBytes-len(head)-2) + `"}`
	if len(exact) != MaxBodyBytes {
		t.Fatal(len(exact))
	}
	if r := d.do("POST", "/spawn", H, exact); r.code != 200 {
		t.Fatalf("a body of exactly 64 KiB: %d %s", r.code, r.raw)
	}
	over := head + strings.Repeat("x", MaxBodyBytes-len(head)-1) + `"}`
	if r := d.do("POST", "/spawn", H, over); r.code != 400 || r.errMsg() == "" {
		t.Fatalf("a body of 64 KiB + 1: %d %s", r.code, r.raw)
	}
	expectFigures(t, d.client, "ses_top", "running", 3, 3, 4)

	// /register and /deregister bodies.
	for _, tc := range []struct{ what, body string }{
		{"null", "null"},
		{"empty object", "{}"},
		{"number session_id", `{"session_id": 5, "name": "local/orchestrator", "version": "0.1.0"}`},
		{"null session_id", `{"session_id": null, "name": "local/orchestrator", "version": "0.1.0"}`},
		{"missing name", `{"session_id": "ses_x", "version": "0.1.0"}`},
		{"missing version", `{"session_id": "ses_x", "name": "local/orchestrator"}`},
		{"trailing garbage", `{"session_id": "ses_x", "name": "local/orchestrator", "version": "0.1.0"},`},
	} {
		if r := d.do("POST", "/register", nil, tc.body); r.code != 400 || r.errMsg() == "" {
			t.Errorf("register %s: %d %s", tc.what, r.code, r.raw)
		}
	}
	for _, body := range []string{"null", "{}", `{"outcome": null}`, `{"outcome": ""}`, `{"outcome": "running"}`, `{"outcome": " complete"}`, `{"outcome": "complete"} {}`} {
		if r := d.do("POST", "/deregister", H, body); r.code != 400 || r.errMsg() == "" {
			t.Errorf("deregister %s: %d %s", body, r.code, r.raw)
		}
	}
	expectFigures(t, d.client, "ses_top", "running", 3, 3, 4)
}

func TestHeaderEdges(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator")
	cred := d.mustRegister("ses_top", "local/orchestrator", "0.1.0", "")
	body := `{"name": "local/worker-b", "version": "0.1.0"}`

	// Surrounding white space is not part of an HTTP field value (RFC 9110
	// §5.5), so a credential with spaces or tabs around it is that credential.
	req := "POST /spawn HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
		"x-murmur-spawn-credential: \t " + cred + " \t\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if out := rawExchange(t, d.addr, req); !strings.HasPrefix(out, "HTTP/1.1 200 ") || !strings.Contains(out, `"approval":"msa1.`) {
		t.Fatalf("credential with surrounding white space: %s", out)
	}
	// The header name is case-insensitive.
	req = strings.Replace(req, "x-murmur-spawn-credential", "X-MURMUR-SPAWN-CREDENTIAL", 1)
	if out := rawExchange(t, d.addr, req); !strings.HasPrefix(out, "HTTP/1.1 200 ") {
		t.Fatalf("upper-case header name: %s", out)
	}
	// Given twice, even with the same value, it names no one session: identity.
	req = "POST /spawn HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
		"x-murmur-spawn-credential: " + cred + "\r\nx-murmur-spawn-credential: " + cred + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if out := rawExchange(t, d.addr, req); !strings.HasPrefix(out, "HTTP/1.1 403 ") || !strings.Contains(out, msgIdentity) {
		t.Fatalf("credential given twice: %s", out)
	}
	expectFigures(t, d.client, "ses_top", "running", 3, 2, 3)

	// An approval header that is present but empty or blank is a presented
	// approval that does not verify: refused, never judged by --spawn-allow.
	for _, v := range []string{"", "   ", cred} {
		req := "POST /register HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-murmur-spawn-approval: " + v + "\r\n"
		b := `{"session_id": "ses_other", "name": "local/orchestrator", "version": "0.1.0"}`
		out := rawExchange(t, d.addr, req+"Content-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"+b)
		if !strings.HasPrefix(out, "HTTP/1.1 403 ") || !strings.Contains(out, msgIdentity) {
			t.Fatalf("approval header %q at an allowed name: %s", v, out)
		}
	}
	// A credential header at /register is not an approval: the top-level path.
	if r := d.do("POST", "/register", map[string]string{HeaderCredential: cred},
		map[string]string{"session_id": "ses_cr", "name": "local/worker-a", "version": "0.1.0"}); r.code != 403 || r.errMsg() != msgNotInSpawnAllow("local/worker-a") {
		t.Fatalf("credential header at /register: %d %s", r.code, r.raw)
	}
	// An approval at /deregister is not a credential.
	g := d.mustSpawn(cred, "local/worker-a", "0.1.0")
	expect(t, "approval at /deregister", d.do("POST", "/deregister", map[string]string{HeaderCredential: g.str("approval")}, `{"outcome": "complete"}`), 403, msgIdentity)
	expect(t, "approval in both headers", d.do("POST", "/spawn", map[string]string{HeaderApproval: g.str("approval")}, body), 403, msgIdentity)
	expectFigures(t, d.client, "ses_top", "running", 3, 3, 4)
}

func TestMethodsAndPaths(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, t.TempDir())
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/spawn", "POST"}, {"GET", "/register", "POST"}, {"GET", "/deregister", "POST"},
		{"PUT", "/spawn", "POST"}, {"DELETE", "/register", "POST"},
		{"POST", "/health", "GET"}, {"POST", "/status/ses_x", "GET"}, {"DELETE", "/status/ses_x", "GET"},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+d.addr+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != tc.allow || string(raw) != `{"error": "method not allowed"}` {
			t.Errorf("%s %s: %d Allow=%q %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), raw)
		}
	}
	// HEAD is GET without a body.
	resp, err := http.Head("http://" + d.addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /health: %v %v", resp, err)
	}
	resp.Body.Close()
	// Unknown paths, including near misses of the five, are a JSON 404; an
	// empty or unknown session id is "session not found".
	for _, p := range []string{"/", "/health/", "/spawn/", "/status", "/Health", "/v1/spawn"} {
		if r := d.do("GET", p, nil, nil); r.code != 404 || r.errMsg() != "not found" {
			t.Errorf("GET %s: %d %s", p, r.code, r.raw)
		}
	}
	for _, id := range []string{"", "ses_unknown", "ses_unknown/", "%20", "ses_01a000c58eae7ca0901d5e6b7427df28"} {
		if r := d.do("GET", "/status/"+id, nil, nil); r.code != 404 || r.raw != `{"error": "session not found"}` {
			t.Errorf("GET /status/%s: %d %s", id, r.code, r.raw)
		}
	}
	// A query string does not change the endpoint.
	if r := d.do("GET", "/health?x=1", nil, nil); r.code != 200 || r.raw != "{}" {
		t.Errorf("GET /health?x=1: %d %s", r.code, r.raw)
	}
}

// TestSessionIDReuse: a session id stays registered after its deregister (the
// record is kept for GET /status), so registering it again is the identity
// refusal, on both paths; deregistering twice is too.
func TestSessionIDReuse(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator")
	cred := d.mustRegister("ses_a", "local/orchestrator", "0.1.0", "")
	if r := d.deregister(cred, "complete"); r.code != 200 || r.raw != "{}" {
		t.Fatalf("deregister: %d %s", r.code, r.raw)
	}
	expect(t, "deregister twice", d.deregister(cred, "failed"), 403, msgIdentity)
	expectFigures(t, d.client, "ses_a", "complete", 3, 0, 0)
	expect(t, "re-register a retired id", d.register("ses_a", "local/orchestrator", "0.1.0", ""), 403, msgIdentity)
	p := d.mustRegister("ses_p", "local/orchestrator", "0.1.0", "")
	g := d.mustSpawn(p, "local/worker-a", "0.1.0")
	expect(t, "a child taking a retired id", d.register("ses_a", "local/worker-a", "0.1.0", g.str("approval")), 403, msgIdentity)
	// That presentation spent the approval; it keeps its slot until expiry.
	expect(t, "the approval after it", d.register("ses_c", "local/worker-a", "0.1.0", g.str("approval")), 403, msgApprovalReplayed)
	expectFigures(t, d.client, "ses_p", "running", 3, 1, 2)
	expectFigures(t, d.client, "ses_a", "complete", 3, 0, 2)
}

func TestFlagEdges(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)

	// Repeated value flags: the last one wins; --spawn-allow accumulates.
	d := startDaemon(t, t.TempDir(), "--registry-path", "/nowhere", "--registry-path="+fx.reg,
		"--max-live-capsules=7", "--max-live-capsules", "8", "--max-concurrent", "0", "--max-concurrent=1",
		"--spawn-allow", "local/orchestrator,local/worker-a", "--spawn-allow", "Not A Name", "--spawn-allow=local/orchestrator")
	if d.lines[2] != "mur-roost: machine ceiling 8 live capsules (--max-live-capsules)" {
		t.Fatalf("ceiling line: %q", d.lines[2])
	}
	// A comma list is one name, matching no capsule.
	expect(t, "half of a comma list", d.register("ses_w", "local/worker-a", "0.1.0", ""), 403, msgNotInSpawnAllow("local/worker-a"))
	cred := d.mustRegister("ses_o", "local/orchestrator", "0.1.0", "")
	d.mustSpawn(cred, "local/worker-a", "0.1.0")
	expect(t, "--max-concurrent=1 won", d.spawn(cred, "local/worker-b", "0.1.0"), 403, msgConcurrency(1, 1))

	// --port 0 binds a free port and the listening line names it.
	if strings.HasSuffix(d.addr, ":0") {
		t.Fatalf("listening line shows port 0: %q", d.lines[1])
	}
	// A large figure is a whole number; only what an int cannot hold is refused.
	d2 := startDaemon(t, t.TempDir(), "--max-live-capsules", "1000000000000", "--max-depth", "007")
	if d2.lines[2] != "mur-roost: machine ceiling 1000000000000 live capsules (--max-live-capsules)" {
		t.Fatalf("ceiling line: %q", d2.lines[2])
	}
	env := baseEnv(t.TempDir())
	for _, args := range [][]string{
		{"--max-live-capsules", "99999999999999999999"}, {"--port", "65536"}, {"--port=99999999999"},
		{"--max-depth", "+1"}, {"--max-depth", "1e3"}, {"--max-depth", " 1"}, {"--max-concurrent", "0x10"},
		{"--registry-path"}, {"--registry-path="}, {"--spawn-allow"},
	} {
		code, out, errOut := runOnce(t, env, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "mur-roost: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2 and one line", args, code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--version=x"}, "unknown argument: --version=x"},
		{[]string{"--max-depth", "2", "--max-total=1", "--version"}, "unknown argument: --max-total"},
		{[]string{"--version", "--max-depth", "x"}, "mur-roost: --max-depth takes a whole number, not 'x'"},
	} {
		code, out, errOut := runOnce(t, env, tc.args...)
		if code != 2 || out != "" || errOut != tc.msg+"\n" {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.msg)
		}
	}
	// A port another process holds: exit 1, the OS's words, no listening line.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	code, out, errOut := runOnce(t, env, "--port", port)
	if code != 1 || strings.Contains(out, "listening") || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("taken port: exit %d stdout %q stderr %q", code, out, errOut)
	}
}

// TestExpiryWallClock is the 60-second expiry on the real binary and the real
// clock. It takes a minute, so it runs only with MURMUR_ROOST_SLOW=1; the
// same handler is walked on a hand-moved clock in TestApprovalExpiry.
func TestExpiryWallClock(t *testing.T) {
	if os.Getenv("MURMUR_ROOST_SLOW") != "1" {
		t.Skip("set MURMUR_ROOST_SLOW=1 to wait out a real 60-second approval")
	}
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator", "--max-concurrent", "1")
	cred := d.mustRegister("ses_p", "local/orchestrator", "0.1.0", "")
	g := d.mustSpawn(cred, "local/worker-a", "0.1.0")
	expires := int64(g.body["expires_at_ms"].(float64))
	expect(t, "slot held", d.spawn(cred, "local/worker-b", "0.1.0"), 403, msgConcurrency(1, 1))
	expectFigures(t, d.client, "ses_p", "running", 3, 1, 2)
	time.Sleep(time.Until(time.UnixMilli(expires)) + 500*time.Millisecond)
	// Nothing ran in between; the read itself releases the slot.
	expectFigures(t, d.client, "ses_p", "running", 3, 0, 1)
	expect(t, "expired", d.register("ses_c", "local/worker-a", "0.1.0", g.str("approval")), 403, msgApprovalExpired)
	d.mustSpawn(cred, "local/worker-b", "0.1.0")
}

// TestLongSessionID: any session id the daemon registers gets a credential it
// will take back, and an approval its child can present; an id too long for
// that is a 400 before anything else is asked.
func TestLongSessionID(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator")
	for _, id := range []string{strings.Repeat("s", 8000), strings.Repeat("<", 1400) + "\u00e9\x01"} {
		cred := d.mustRegister(id, "local/orchestrator", "0.1.0", "")
		g := d.mustSpawn(cred, "local/worker-a", "0.1.0")
		child := d.mustRegister(id+"-child", "local/worker-a", "0.1.0", g.str("approval"))
		if r := d.deregister(child, "complete"); r.code != 200 {
			t.Fatalf("deregister child of a %d-byte id: %d %s", len(id), r.code, r.raw)
		}
		if r := d.deregister(cred, "complete"); r.code != 200 {
			t.Fatalf("deregister a %d-byte id: %d %s", len(id), r.code, r.raw)
		}
	}
	// Too long: a 400, asked with the body (before --spawn-allow).
	for _, id := range []string{strings.Repeat("s", 10000), strings.Repeat("<", 2000)} {
		r := d.register(id, "local/not-allowed", "0.1.0", "")
		if r.code != 400 || !strings.HasPrefix(r.errMsg(), "session_id is too long") {
			t.Fatalf("a %d-byte id: %d %.200s", len(id), r.code, r.raw)
		}
	}
}

// TestLoopbackOnly: the port is bound on 127.0.0.1 and nowhere else — not
// on another address of this host, nor on another loopback address.
func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, t.TempDir())
	_, port, _ := net.SplitHostPort(d.addr)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	others := []string{"127.0.0.2"}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			others = append(others, ipn.IP.String())
		}
	}
	for _, ip := range others {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("the daemon answers on %s:%s", ip, port)
		}
	}
	if c, err := net.DialTimeout("tcp6", net.JoinHostPort("::1", port), 2*time.Second); err == nil {
		c.Close()
		t.Errorf("the daemon answers on [::1]:%s", port)
	}
}

// TestRegistryDisagrees: bytes that disagree with their sidecar, or a zip
// whose manifest does not parse, cannot be resolved (500) — never judged,
// never a pass — and an approval presented meanwhile is left untouched.
func TestRegistryDisagrees(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator")
	cred := d.mustRegister("ses_p", "local/orchestrator", "0.1.0", "")
	g := d.mustSpawn(cred, "local/worker-a", "0.1.0")

	zipPath := filepath.Join(fx.reg, "local", "worker-a", "0.1.0", "worker-a-0.1.0.mur.zip")
	good, err := os.ReadFile(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff
	unparsable := zipOf(t, map[string][]byte{"murmur.yaml": []byte("name: [unclosed\n")})
	dir := filepath.Dir(zipPath)
	sidecars := map[string][]byte{}
	for _, n := range []string{"worker-a-0.1.0.sha256", "worker-a-0.1.0.meta.json"} {
		if sidecars[n], err = os.ReadFile(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		what     string
		data     []byte
		sidecars bool // rewrite the sidecars to agree with data
	}{{"bytes against their sidecar", bad, false}, {"a manifest that does not parse", unparsable, true}} {
		what, data := tc.what, tc.data
		if err := os.WriteFile(zipPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if tc.sidecars {
			sum := store.HashHex(data)
			os.WriteFile(filepath.Join(dir, "worker-a-0.1.0.sha256"), []byte(sum+"\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "worker-a-0.1.0.meta.json"), []byte(`{"name": "local/worker-a", "version": "0.1.0", "runtime": "capsule", "description": "", "tags": [], "sha256": "`+sum+`"}`), 0o644)
		}
		r := d.spawn(cred, "local/worker-a", "0.1.0")
		if r.code != 500 || !strings.Contains(r.errMsg(), "could not be resolved from the registry") {
			t.Fatalf("spawn, %s: %d %s", what, r.code, r.raw)
		}
		t.Logf("%s: %s", what, r.errMsg())
		if r := d.register("ses_c", "local/worker-a", "0.1.0", g.str("approval")); r.code != 500 {
			t.Fatalf("register, %s: %d %s", what, r.code, r.raw)
		}
	}
	expectFigures(t, d.client, "ses_p", "running", 3, 1, 2)
	if err := os.WriteFile(zipPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	for n, b := range sidecars {
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	d.mustRegister("ses_c", "local/worker-a", "0.1.0", g.str("approval"))
	expectFigures(t, d.client, "ses_p", "running", 3, 1, 2)
}

// TestRetiredParent: a parent that deregisters while its child runs keeps its
// depth figure, releases its reservations, and counts the running child until
// that child deregisters; the child's own credential still works.
func TestRetiredParent(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	d := startDaemon(t, t.TempDir(), "--registry-path", fx.reg, "--spawn-allow", "local/self")
	p := d.mustRegister("ses_p", "local/self", "0.1.0", "")
	g := d.mustSpawn(p, "local/self", "0.1.0")
	c := d.mustRegister("ses_c", "local/self", "0.1.0", g.str("approval"))
	pending := d.mustSpawn(p, "local/self", "0.1.0")
	expectFigures(t, d.client, "ses_p", "running", 3, 2, 3)
	if r := d.deregister(p, "failed"); r.code != 200 || r.raw != "{}" {
		t.Fatalf("parent deregister: %d %s", r.code, r.raw)
	}
	expectFigures(t, d.client, "ses_p", "failed", 3, 1, 1)
	expect(t, "the released approval", d.register("ses_x", "local/self", "0.1.0", pending.str("approval")), 403, msgIdentity)
	// The orphan may still delegate: its own figures are its own.
	gc := d.mustSpawn(c, "local/self", "0.1.0")
	d.mustRegister("ses_gc", "local/self", "0.1.0", gc.str("approval"))
	expectFigures(t, d.client, "ses_c", "running", 2, 1, 2)
	expectFigures(t, d.client, "ses_gc", "running", 1, 0, 2)
	if r := d.deregister(c, "complete"); r.code != 200 {
		t.Fatalf("child deregister: %d %s", r.code, r.raw)
	}
	expectFigures(t, d.client, "ses_p", "failed", 3, 0, 1)
}
