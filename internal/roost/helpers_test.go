package roost

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/testbin"
)

// roostBin is the real mur-roost binary, built once in TestMain.
var roostBin string

func TestMain(m *testing.M) {
	roostBin = testbin.MustPath("./cmd/mur-roost")
	os.Exit(m.Run())
}

// capsuleYAML is a manifest-only agent capsule named name@version whose
// capabilities block is caps (YAML, indented under `capabilities:`), plus
// any extra top-level YAML.
func capsuleYAML(name, version, caps, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nversion: %q\ninference:\n  model: test-model\n", name, version)
	if caps != "" {
		b.WriteString("capabilities:\n")
		for _, line := range strings.Split(strings.TrimRight(caps, "\n"), "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	b.WriteString(extra)
	return b.String()
}

// zipOf packs files (name -> content) into .mur.zip bytes.
func zipOf(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range []string{"murmur.yaml", "capsule.wasm", "pad.bin"} {
		data, ok := files[n]
		if !ok {
			continue
		}
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// publish writes a real artifact (zip + .sha256 + .meta.json) into the
// registry at reg through the store's own Publish, replacing any artifact of
// the same coordinates, and returns its content hash.
func publish(t testing.TB, reg, name, version, caps string, pad ...byte) string {
	t.Helper()
	files := map[string][]byte{"murmur.yaml": []byte(capsuleYAML(name, version, caps, ""))}
	if len(pad) > 0 {
		files["pad.bin"] = pad
	}
	res, err := store.At(reg).Publish(zipOf(t, files), true)
	if err != nil {
		t.Fatalf("publish %s@%s: %v", name, version, err)
	}
	return res.SHA256
}

// client talks to a daemon at base.
type client struct {
	t    testing.TB
	base string
	hc   *http.Client
	// running is the daemon's running directory, "" for none. register
	// writes this process's running record for the session there first, as
	// a runtime does before it registers: the evidence the census counts a
	// registration on.
	running string
}

type reply struct {
	code int
	raw  string
	body map[string]any
}

func (r reply) str(k string) string { s, _ := r.body[k].(string); return s }
func (r reply) num(k string) int    { f, _ := r.body[k].(float64); return int(f) }
func (r reply) errMsg() string      { return r.str("error") }

func (c *client) do(method, path string, hdr map[string]string, body any) reply {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{code: resp.StatusCode, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			c.t.Fatalf("%s %s: %d body is not a JSON object: %q", method, path, resp.StatusCode, raw)
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	return r
}

func (c *client) register(sid, name, version, approval string) reply {
	c.t.Helper()
	h := map[string]string{}
	if approval != "" {
		h[HeaderApproval] = approval
	}
	c.runningRecord(sid)
	return c.do("POST", "/register", h, map[string]string{"session_id": sid, "name": name, "version": version})
}

// runningRecord writes this process's running record for sid in the
// daemon's running directory, unless one is there (a start-up capsule's).
func (c *client) runningRecord(sid string) {
	c.t.Helper()
	if c.running == "" || sid == "" || filepath.Base(sid) != sid || sid == "." || sid == ".." || len(sid) > 200 {
		return
	}
	if _, err := os.Lstat(filepath.Join(c.running, sid+".json")); err == nil {
		return
	}
	pid, start, err := running.Self()
	if err != nil {
		c.t.Fatal(err)
	}
	os.MkdirAll(c.running, 0o700)
	writeRecord(c.t, c.running, record(sid, pid, start))
}

func (c *client) spawn(cred, name, version string) reply {
	c.t.Helper()
	return c.do("POST", "/spawn", map[string]string{HeaderCredential: cred}, map[string]string{"name": name, "version": version})
}

func (c *client) deregister(cred, outcome string) reply {
	c.t.Helper()
	return c.do("POST", "/deregister", map[string]string{HeaderCredential: cred}, map[string]string{"outcome": outcome})
}

func (c *client) status(sid string) reply {
	c.t.Helper()
	return c.do("GET", "/status/"+sid, nil, nil)
}

// mustRegister registers and returns the credential.
func (c *client) mustRegister(sid, name, version, approval string) string {
	c.t.Helper()
	r := c.register(sid, name, version, approval)
	if r.code != 200 || !strings.HasPrefix(r.str("credential"), "msc1.") {
		c.t.Fatalf("register %s (%s@%s): %d %s", sid, name, version, r.code, r.raw)
	}
	return r.str("credential")
}

// mustSpawn asks for an approval and returns it.
func (c *client) mustSpawn(cred, name, version string) reply {
	c.t.Helper()
	r := c.spawn(cred, name, version)
	if r.code != 200 || !strings.HasPrefix(r.str("approval"), "msa1.") {
		c.t.Fatalf("spawn %s@%s: %d %s", name, version, r.code, r.raw)
	}
	return r
}

// expect checks a reply's status and error message exactly.
func expect(t testing.TB, what string, r reply, code int, msg string) {
	t.Helper()
	if r.code != code || r.errMsg() != msg {
		t.Fatalf("%s: got %d %s\nwant %d {\"error\": %q}", what, r.code, r.raw, code, msg)
	}
}

func expectFigures(t testing.TB, c *client, sid, status string, depth, children, capsules int) {
	t.Helper()
	r := c.status(sid)
	if r.code != 200 || r.str("status") != status || r.num("depth_remaining") != depth ||
		r.num("live_children") != children || r.num("live_capsules") != capsules || len(r.body) != 4 {
		t.Fatalf("status %s: got %d %s; want status=%s depth_remaining=%d live_children=%d live_capsules=%d",
			sid, r.code, r.raw, status, depth, children, capsules)
	}
}
