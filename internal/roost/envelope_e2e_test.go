package roost

import (
	"testing"

	"github.com/murmur-go/murmur/internal/store"
)

// TestSpawnEnvelopeAxes walks the twelve axes through the real binary, with
// manifests parsed from published artifacts: each child exceeds its parent on
// one axis and hears that axis's key and its own entry; a child inside every
// axis is granted.
func TestSpawnEnvelopeAxes(t *testing.T) {
	t.Parallel()
	reg := t.TempDir()
	pub := func(name, caps, extra string) {
		t.Helper()
		y := capsuleYAML(name, "0.1.0", caps, extra)
		if _, err := store.At(reg).Publish(zipOf(t, map[string][]byte{"murmur.yaml": []byte(y)}), true); err != nil {
			t.Fatalf("publish %s: %v\n%s", name, err, y)
		}
	}
	state := func(store string) string {
		if store == "" {
			return "artifacts:\n  - name: local/kv\n    version: \"1.0.0\"\n    capabilities:\n      state: {}\n"
		}
		return "artifacts:\n  - name: local/kv\n    version: \"1.0.0\"\n    capabilities:\n      state: {store: " + store + "}\n"
	}
	children := []struct {
		name, caps, extra string
		key, entry        string // "" = granted
	}{
		{"local/c-net", "network:\n  allow: [http://api.test]\n", "", "capabilities.network.allow", "http://api.test"},
		{"local/c-unix", "network:\n  unix_sockets: true\n", "", "capabilities.network.unix_sockets", "true"},
		{"local/c-peer", "peer_fetch:\n  allow: [other.test]\n", "", "capabilities.peer_fetch.allow", "other.test"},
		{"local/c-shell", "shell:\n  allow: [git, bash]\n", "", "capabilities.shell.allow", "bash"},
		{"local/c-spawn", "spawn:\n  allow: [local/zzz]\n", "", "capabilities.spawn.allow", "local/zzz"},
		{"local/c-env", "env:\n  allow: [HOME]\n", "", "capabilities.env.allow", "HOME"},
		{"local/c-noscope", "", "", "capabilities.filesystem.scope", "none"},
		{"local/c-scope", "filesystem:\n  scope: srcx\n", "", "capabilities.filesystem.scope", "srcx"},
		{"local/c-exec", "filesystem:\n  scope: src\n  workdir_exec: true\n", "", "capabilities.filesystem.workdir_exec", "true"},
		{"local/c-state", "filesystem:\n  scope: src\ncontainment: scoped\n", state(""), "capabilities.state.store", "c-state"},
		{"local/c-skill", "filesystem:\n  scope: src/a\ncontainment: sealed\ninstall:\n  skill: [local/review, local/write]\n", "", "capabilities.install.skill", "local/write"},
		{"local/c-tool", "filesystem:\n  scope: src\ncontainment: scoped\ninstall:\n  tool: [local/t2]\n", "", "capabilities.install.tool", "local/t2"},
		{"local/c-cont", "filesystem:\n  scope: src\ncontainment: advisory\n", "", "capabilities.containment", "advisory"},
		{"local/c-cont-none", "filesystem:\n  scope: src\n", "", "capabilities.containment", "advisory"},
		{"local/c-ok", "network:\n  allow: [\"https://example.com:8443\", \"https://api.test\"]\npeer_fetch:\n  allow: [\"https://peer.test\"]\nshell:\n  allow: [git]\nenv:\n  allow: [LANG]\nfilesystem:\n  scope: src/deep\ninstall:\n  skill: [local/review, local/ref*]\n  tool: [local/t1]\ncontainment: sealed\n", state("shared"), "", ""},
	}
	allow := "spawn:\n  allow: ["
	for i, c := range children {
		if i > 0 {
			allow += ", "
		}
		allow += c.name
		pub(c.name, c.caps, c.extra)
	}
	allow += "]\n"
	pub("local/env-parent", allow+`network:
  allow: [example.com, "https://api.test"]
  unix_sockets: false
peer_fetch:
  allow: [peer.test]
shell:
  allow: [git]
env:
  allow: [LANG]
filesystem:
  scope: src
  workdir_exec: false
install:
  skill: ["local/re*"]
  tool: [local/t1]
containment: scoped
`, state("shared"))

	d := startDaemon(t, t.TempDir(), "--registry-path", reg, "--spawn-allow", "local/env-parent", "--max-concurrent", "64")
	cred := d.mustRegister("ses_env", "local/env-parent", "0.1.0", "")
	for _, c := range children {
		r := d.spawn(cred, c.name, "0.1.0")
		if c.key == "" {
			if r.code != 200 {
				t.Errorf("%s: %d %s, want granted", c.name, r.code, r.raw)
			}
			continue
		}
		want := c.key + ": the child declares '" + c.entry + "', which its parent does not hold — a spawned capsule can never hold more capability than the capsule that spawned it"
		if r.code != 403 || r.errMsg() != want {
			t.Errorf("%s: got %d %s\nwant 403 %q", c.name, r.code, r.raw, want)
		}
	}
	// Only the granted child holds a slot.
	expectFigures(t, d.client, "ses_env", "running", 3, 1, 2)
}
