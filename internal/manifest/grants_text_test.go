package manifest

import (
	"strings"
	"testing"
)

func TestGrantsLines(t *testing.T) {
	m := mustParse(t, `name: lead
version: "1"
capabilities:
  network:
    allow: [api.example.com, "https://b.example:8443"]
  spawn:
    allow: [acme/worker, acme/tester]
    workdir_snapshot: [acme/tester]
  env:
    allow: [LANG]
  filesystem:
    scope: src
  containment: scoped
  limits:
    deadline_seconds: 45
    memory_bytes: 16777216
artifacts:
  - name: acme/lint
    version: "2"
    capabilities:
      shell:
        allow: [bash]
      env:
        allow: [LANG]
      state: {}
  - name: acme/fmt
    version: "3"
`)
	g, _ := m.EffectiveGrants()
	got := strings.Join(g.Lines(), "\n")
	for _, want := range []string{
		"capsule grants:",
		"  network:                api.example.com, https://b.example:8443",
		"  spawn:                  acme/worker, acme/tester",
		"  spawn workdir snapshot: acme/tester",
		"  env:                    LANG",
		"  filesystem:             src/ inside the work folder",
		"  containment:            scoped",
		"  deadline:               45 s per component call, 45 s per hook call",
		"  memory:                 16 MiB per linear memory",
		"  work folder size:       10 GiB",
		"artifact grants:",
		"  acme/lint@2 (tool): the capsule's grants, except",
		"    network:                none",
		"    dropped capabilities.shell.allow: bash (not granted to the capsule)",
		"    state store lead",
		"  acme/fmt@3 (tool): the capsule's grants\n",
		"state stores:\n  acme/lint: lead -> $HOME/.murmur/state/lead\n",
	} {
		if !strings.Contains(got+"\n", want) {
			t.Errorf("lines lack %q:\n%s", want, got)
		}
	}
	// An axis narrowing left alone is not repeated under the artifact.
	if strings.Contains(got, "    env:") {
		t.Errorf("an unchanged axis is listed under the artifact:\n%s", got)
	}

	// A manifest that declares nothing lists every axis as none, and the
	// built-in limits.
	m = mustParse(t, head)
	g, _ = m.EffectiveGrants()
	got = strings.Join(g.Lines(), "\n")
	for _, want := range []string{"  shell:                  none", "  spawn workdir snapshot: none",
		"  filesystem:             the whole work folder", "  containment:            none declared (ranks as advisory)",
		"  deadline:               600 s per component call, 30 s per hook call", "  memory:                 512 MiB per linear memory",
		"artifact grants: no artifacts declared", "state stores: none"} {
		if !strings.Contains(got, want) {
			t.Errorf("empty manifest lines lack %q:\n%s", want, got)
		}
	}
}

func TestBytesText(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1000: "1000 bytes", 1024: "1 KiB", 512 << 20: "512 MiB", 10 << 30: "10 GiB", 3<<20 + 1: "3145729 bytes"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}
