package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/testbin"
)

// BenchmarkWholeProcess is issue 15's whole-process figure: a warm `mur run`
// of examples/hello-script (one echo-tool invoke, both components already in
// the compile cache) beside /bin/true in the same run, so the two are read
// against each other on a shared machine. Each reports ns/op (the mean),
// median-ms and peak-rss-MiB, the largest ru_maxrss of any of its processes
// (read through testdata/spawn, which says why). The spawner's own start is in
// ns/op and median-ms of every row alike, so read them against /bin/true.
// mur --version is the process-start floor of the mur binary itself.
func BenchmarkWholeProcess(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	root := repoRoot()
	copyDir(b, filepath.Join(root, "examples", "echo-tool"), filepath.Join(base, "echo-tool"))
	copyDir(b, filepath.Join(root, "examples", "hello-script"), filepath.Join(base, "hello-script"))
	proj := filepath.Join(base, "hello-script")
	for _, step := range []struct {
		dir  string
		args []string
	}{
		{filepath.Join(base, "echo-tool"), []string{"build"}},
		{filepath.Join(base, "echo-tool"), []string{"publish"}},
		{proj, []string{"install"}},
		{proj, []string{"run", "--task", "hello"}}, // compiles both components once
	} {
		if r := runMur(b, homeDir, step.dir, nil, step.args...); r.Code != 0 {
			b.Fatalf("mur %v: %+v", step.args, r)
		}
	}
	env := []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH")}
	spawn := testbin.Path(b, "./internal/cli/testdata/spawn")
	for _, c := range []struct {
		name string
		argv []string
		dir  string
	}{
		{"bin-true", []string{"/bin/true"}, base},
		{"mur-version", []string{murBin(b), "--version"}, base},
		{"mur-run-hello-script", []string{murBin(b), "run", "--task", "hello"}, proj},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := make([]time.Duration, 0, b.N)
			var peak int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(spawn, c.argv...)
				cmd.Dir, cmd.Env = c.dir, env
				var errOut strings.Builder
				cmd.Stderr = &errOut
				t0 := time.Now()
				out, err := cmd.Output()
				d = append(d, time.Since(t0))
				if err != nil {
					b.Fatalf("%v: %v\n%s", c.argv, err, errOut.String())
				}
				kib, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
				if err != nil {
					b.Fatalf("spawner printed %q", out)
				}
				peak = max(peak, kib)
			}
			b.StopTimer()
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(peak)/1024, "peak-rss-MiB")
		})
	}
}
