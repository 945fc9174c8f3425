package launch

import (
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/manifest"
)

// W-SEC-013: a host warning from the probe prints once per launch, and
// never in a child whose parent reported it (MURMUR_HOST_WARNINGS_REPORTED=1).
func TestHostWarnings(t *testing.T) {
	defer func(p func(string) *contain.Report) { probe = p }(probe)
	probe = func(string) *contain.Report {
		r := weakHost()
		r.HostWarnings = []string{"this host restricts user namespaces (user namespaces are denied): no command can be sealed here, and the strongest tier is advisory"}
		return r
	}
	dir := project(t, "name: s\nversion: 1.0.0\ncapabilities:\n  shell:\n    allow: [bash]\n", "ok.wat")
	count := func(env map[string]string) int {
		p, err := Load(Request{ManifestPath: dir, Home: t.TempDir(), LookupEnv: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, w := range p.Containment.Warnings {
			if w.Code == "W-SEC-013" {
				n++
				if !strings.Contains(w.Message, "restricts user namespaces") {
					t.Errorf("W-SEC-013 says %q", w.Message)
				}
			}
		}
		return n
	}
	if n := count(nil); n != 1 {
		t.Errorf("a launch warned W-SEC-013 %d times, want once", n)
	}
	if n := count(map[string]string{"MURMUR_HOST_WARNINGS_REPORTED": "1"}); n != 0 {
		t.Errorf("a child with MURMUR_HOST_WARNINGS_REPORTED=1 warned W-SEC-013 %d times", n)
	}
	// No native commands and no floor: no probe, so nothing to warn of.
	plain := project(t, "name: s\nversion: 1.0.0\n", "ok.wat")
	p, err := Load(Request{ManifestPath: plain, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Containment.Warnings) != 0 {
		t.Errorf("a capsule with no native commands warned %v", p.Containment.Warnings)
	}
}

// The peer file plane's and the state stores' not-protected lines: below
// sealed only, peer-in/ for a fetcher, the stores at advisory only.
func TestPlaneNotProtected(t *testing.T) {
	m, err := manifest.Parse([]byte(`name: p
version: 0.1.0
artifacts:
  - name: acme/t
    version: "1"
    capabilities:
      state: {}
capabilities:
  peer_fetch:
    allow: [127.0.0.1]
`), "murmur.yaml", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.EffectiveGrants()
	for _, tc := range []struct {
		achieved string
		native   bool
		want     int
	}{{"advisory", true, 2}, {"scoped", true, 1}, {"sealed", true, 0}, {"advisory", false, 0}} {
		p := &Plan{Manifest: m, Grants: g, Containment: Containment{Achieved: tc.achieved, Native: tc.native}}
		got := p.PlaneNotProtected()
		if len(got) != tc.want {
			t.Errorf("%s native=%v: %q", tc.achieved, tc.native, got)
		}
		for _, l := range got {
			if !strings.HasPrefix(l, "not protected here: ") {
				t.Errorf("%q", l)
			}
		}
	}
}
