//go:build linux

package contain_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/contain/egress"
	"github.com/murmur-go/murmur/internal/testbin"
)

// BenchmarkTrue is one /bin/true: plain fork+exec, through each tier, and
// through bwrap --unshare-all when it is installed, all in one run. Each
// tier runs with each helper binary: mur-contain (the lean helper mur uses
// when it is installed beside it), mur itself (the fallback: the whole
// binary re-executed) and this test binary (small, as a floor). Compare
// each row's ns/op with plain's.
func BenchmarkTrue(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("the tiers are Linux")
	}
	w := newWorldB(b)
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	px, err := egress.Start(nil)
	if err != nil {
		b.Logf("no network namespace rows: %v", err)
	} else {
		defer px.Close()
	}
	helpers := []struct{ name, path string }{
		{"mur-contain", staticHelper(b)},
		{"mur", testbin.Path(b, "./cmd/mur")},
		{"self", ""},
	}
	defer contain.UseHelper("")
	type tier struct {
		name, class string
		eg          contain.Egress
	}
	var tiers []tier
	for _, class := range classes {
		tiers = append(tiers, tier{class, class, nil})
	}
	if px != nil {
		for _, class := range classes {
			tiers = append(tiers, tier{class + "+netns", class, px})
		}
	}
	for _, h := range helpers {
		for _, tr := range tiers {
			class := tr.class
			b.Run(h.name+"/"+tr.name, func(b *testing.B) {
				if lacks := contain.Probe().Lacks(class); lacks != "" {
					b.Skipf("this host lacks %s", lacks)
				}
				contain.UseHelper(h.path)
				p, err := contain.NewPlan(contain.Input{Class: class, WorkFolder: w, Home: w, Egress: tr.eg})
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					c, err := contain.Command(p, "/bin/true", nil, nil, w)
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("bwrap", func(b *testing.B) {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			b.Skip("bubblewrap is not installed")
		}
		args := []string{"--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
			"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "/bin/true"}
		for b.Loop() {
			if err := exec.Command(bw, args...).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// staticHelper builds cmd/mur-contain as scripts/install.sh does: static,
// without cgo.
func staticHelper(b *testing.B) string {
	out := filepath.Join(b.TempDir(), contain.HelperName)
	c := exec.Command("go", "build", "-o", out, "./cmd/mur-contain")
	c.Dir = testbin.Root()
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := c.CombinedOutput(); err != nil {
		b.Fatalf("building mur-contain: %v\n%s", err, msg)
	}
	return out
}

func newWorldB(b *testing.B) string {
	return b.TempDir()
}

// BenchmarkTiersInterleaved runs plain, each tier and bwrap in rotation,
// one of each per iteration, and reports each case's median in ms: on a
// shared, loaded machine a load spike then lands on every case alike, so
// the ratios to plain hold where BenchmarkTrue's separate runs do not. The
// sub-benchmarks are the helper binary: lean (mur-contain, built static as
// install.sh builds it) and mur (the fallback: mur re-executed). One helper
// per rotation: alternating binaries would measure cold caches instead.
func BenchmarkTiersInterleaved(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("the tiers are Linux")
	}
	w := newWorldB(b)
	defer contain.UseHelper("")
	type kase struct {
		name string
		run  func() error
	}
	px, err := egress.Start(nil)
	if err != nil {
		b.Logf("no network namespace cases: %v", err)
	} else {
		defer px.Close()
	}
	for _, h := range []struct{ name, path string }{{"lean", staticHelper(b)}, {"mur", testbin.Path(b, "./cmd/mur")}} {
		b.Run(h.name, func(b *testing.B) {
			contain.UseHelper(h.path)
			cases := []kase{{"plain", func() error { return exec.Command("/bin/true").Run() }}}
			type variant struct {
				name, class string
				eg          contain.Egress
			}
			var vs []variant
			for _, class := range classes {
				vs = append(vs, variant{class, class, nil})
			}
			if px != nil && h.name == "lean" {
				for _, class := range classes {
					vs = append(vs, variant{class + "+netns", class, px})
				}
			}
			for _, v := range vs {
				if lacks := contain.Probe().Lacks(v.class); lacks != "" {
					b.Logf("%s: this host lacks %s", v.class, lacks)
					continue
				}
				p, err := contain.NewPlan(contain.Input{Class: v.class, WorkFolder: w, Home: w, Egress: v.eg})
				if err != nil {
					b.Fatal(err)
				}
				cases = append(cases, kase{v.name, func() error {
					c, err := contain.Command(p, "/bin/true", nil, nil, w)
					if err != nil {
						return err
					}
					return c.Run()
				}})
			}
			if bw, err := exec.LookPath("bwrap"); err == nil {
				args := []string{"--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
					"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "/bin/true"}
				cases = append(cases, kase{"bwrap", func() error { return exec.Command(bw, args...).Run() }})
			}
			took := make([][]time.Duration, len(cases))
			// Each rotation is a fresh shuffle (a fixed seed): a case pays
			// for what the one before it left the kernel to tear down
			// (bwrap's network namespace, say), so no case may always
			// follow the same one.
			rng := rand.New(rand.NewPCG(1, 2))
			order := make([]int, len(cases))
			for i := range order {
				order[i] = i
			}
			for b.Loop() {
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, i := range order {
					c := cases[i]
					t0 := time.Now()
					if err := c.run(); err != nil {
						b.Fatalf("%s: %v", c.name, err)
					}
					took[i] = append(took[i], time.Since(t0))
				}
			}
			for i, c := range cases {
				d := took[i]
				slices.Sort(d)
				b.ReportMetric(float64(d[len(d)/2])/1e6, "ms-"+c.name)
			}
		})
	}
}
