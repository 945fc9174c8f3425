package contain_test

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
)

func TestProbe(t *testing.T) {
	r := contain.Probe()
	b, _ := json.Marshal(r)
	t.Logf("probe: %s best=%s", b, r.Best())
	if contain.Probe() != r {
		t.Fatal("Probe is not cached")
	}
	if runtime.GOOS != "linux" {
		return
	}
	// On this machine kind every mechanism is known to exist (the
	// reference study): a probe failure here is a bug, not a skip.
	if r.Best() != contain.Sealed {
		t.Fatalf("best = %s, want sealed; lacks: %s", r.Best(), r.Lacks(contain.Sealed))
	}
	if !r.NetNS {
		t.Fatalf("netns: %s", r.NetNSBlocker)
	}
}

func TestLacks(t *testing.T) {
	r := &contain.Report{LandlockABI: 0, LandlockBlocker: "no Landlock", Seccomp: true, Namespaces: false, NamespacesBlocker: "mount denied"}
	for _, c := range []struct{ class, want string }{
		{contain.Advisory, ""},
		{contain.Scoped, "no Landlock"},
		{contain.Sealed, "mount denied; no Landlock"},
	} {
		if got := r.Lacks(c.class); got != c.want {
			t.Errorf("Lacks(%s) = %q, want %q", c.class, got, c.want)
		}
	}
	if r.Best() != contain.Advisory {
		t.Errorf("Best = %s", r.Best())
	}
}

func TestPlanMechanisms(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		class string
		exec  bool
		want  string
		mech  string
	}{
		{contain.Sealed, false, contain.Sealed, contain.MechSealed},
		{contain.Scoped, false, contain.Scoped, contain.MechScoped},
		{contain.Advisory, false, contain.Advisory, contain.MechanismFor(contain.Advisory)},
		{contain.Sealed, true, contain.Advisory, contain.MechanismFor(contain.Advisory)},
	} {
		p, err := contain.NewPlan(contain.Input{Class: c.class, WorkFolder: dir, WorkdirExec: c.exec})
		if err != nil {
			t.Fatal(err)
		}
		if p.Class != c.want || p.Mechanism != c.mech {
			t.Errorf("%s exec=%v: got %s %s, want %s %s", c.class, c.exec, p.Class, p.Mechanism, c.want, c.mech)
		}
	}
	if _, err := contain.NewPlan(contain.Input{Class: "tight", WorkFolder: dir}); err == nil {
		t.Error("unknown class accepted")
	}
	if _, err := contain.NewPlan(contain.Input{Class: contain.Scoped, WorkFolder: "rel"}); err == nil {
		t.Error("relative work folder accepted")
	}
	p, _ := contain.NewPlan(contain.Input{Class: contain.Scoped, WorkFolder: dir})
	for _, e := range p.Paths {
		if e.Path == "/etc/shadow" || e.Path == "/etc" {
			t.Errorf("plan grants %s", e.Path)
		}
	}
}
