package delegate

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/testbin"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// BenchmarkDelegateScriptStart is the figure "delegate-task call →
// started, script-capsule child, warm caches" (docs/benchmarks.md): a
// script parent's runtime against the real mur-roost, launching the real
// mur on examples/delegation's Go worker, one delegation at a time. Each
// op is one call; the child is left to finish (and its completion to
// arrive) outside the timer. The metrics are the call's p50 and p90 and
// the p50 of each step: roost (POST /spawn), exec (the process started),
// child start (its --json line), delivery (none for a script child: its
// task went on standard input). The workdir snapshot is not made here.
func BenchmarkDelegateScriptStart(b *testing.B) {
	mur, roostBin := testbin.Path(b, "./cmd/mur"), testbin.Path(b, "./cmd/mur-roost")
	homeDir, work := b.TempDir(), b.TempDir()
	testbin.ShareCompileCache(b, homeDir)
	env := []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH")}
	publish := func(dir, manifest, wasm string) {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(manifest), 0o644)
		data, err := os.ReadFile(filepath.Join(testbin.Root(), wasm))
		if err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(wasm)), data, 0o644)
		for _, c := range []string{"build", "publish"} {
			cmd := exec.Command(mur, c)
			cmd.Dir, cmd.Env = dir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("mur %s in %s: %v\n%s", c, dir, err, out)
			}
		}
	}
	publish(filepath.Join(work, "worker"), "name: worker\nversion: 1.0.0\n", "examples/delegation/worker/delegation-worker.wasm")
	publish(filepath.Join(work, "parent"), "name: parent\nversion: 1.0.0\ncapabilities:\n  spawn:\n    allow: [local/worker]\n",
		"testdata/components/capsule-delegator/capsule-delegator.wasm")

	roost := exec.Command(roostBin, "--port", "0", "--spawn-allow", "local/parent")
	roost.Env = env
	out, _ := roost.StdoutPipe()
	if err := roost.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { roost.Process.Signal(syscall.SIGTERM); roost.Wait() }()
	listen := regexp.MustCompile(`^mur-roost: listening on (127\.0\.0\.1:\d+)$`)
	sc := bufio.NewScanner(out)
	roostURL := ""
	for roostURL == "" && sc.Scan() {
		if m := listen.FindStringSubmatch(sc.Text()); m != nil {
			roostURL = "http://" + m[1]
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	sid := ids.New(ids.Session)
	cred, err := Register(context.Background(), roostURL, roostapi.RegisterRequest{SessionID: sid, Name: "local/parent", Version: "1.0.0"}, roostapi.Approval{})
	if err != nil {
		b.Fatal(err)
	}
	records := filepath.Join(work, "records")
	os.MkdirAll(records, 0o700)
	tw, err := trace.Create(filepath.Join(records, trace.FileName), sid, trace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tw.Close()
	lookup := func(k string) (string, bool) {
		switch k {
		case "HOME":
			return homeDir, true
		case "PATH":
			return os.Getenv("PATH"), true
		}
		return "", false
	}
	rt, err := NewScript(Config{RoostURL: roostURL, Credential: cred, SessionID: sid, Name: "local/parent", Version: "1.0.0",
		RecordsDir: records, RuntimeDir: filepath.Join(work, "runtime"), SpawnAllow: []string{"local/worker"},
		Lookup: lookup, MurBinary: mur, Recorder: trace.NewRecorder(tw, nil, time.Now(), nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(roostapi.StatusComplete)
	var call, roostD, execD, startD, deliverD []time.Duration
	rt.onStarted = func(at time.Time, d *delegation) {
		call = append(call, time.Since(at))
		roostD = append(roostD, d.tApproved.Sub(at))
		execD = append(execD, d.tExec.Sub(d.tApproved))
		startD = append(startD, d.tReady.Sub(d.tExec))
		deliverD = append(deliverD, d.tDelivered.Sub(d.tReady))
	}
	tool := rt.Tool()
	in := `{"capsule":"worker","version":"1.0.0","task":"count"}`
	one := func() {
		res, err := tool.Invoke(context.Background(), wit.ToolInput{Data: &in})
		if err != nil || res.Status != wit.StatusPassed {
			b.Fatalf("delegate-task: %v %v", err, res.Data)
		}
		b.StopTimer()
		for len(rt.InFlight(ScriptTaskID)) > 0 { // the child finishes outside the timer
			time.Sleep(2 * time.Millisecond)
		}
		b.StartTimer()
	}
	one() // warm: the child's component compiled into the shared cache
	call, roostD, execD, startD, deliverD = nil, nil, nil, nil, nil
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one()
	}
	b.StopTimer()
	b.ReportMetric(ms(pct(call, 50)), "p50-ms")
	b.ReportMetric(ms(pct(call, 90)), "p90-ms")
	b.ReportMetric(ms(pct(roostD, 50)), "roost-p50-ms")
	b.ReportMetric(ms(pct(execD, 50)), "exec-p50-ms")
	b.ReportMetric(ms(pct(startD, 50)), "childstart-p50-ms")
	b.ReportMetric(ms(pct(deliverD, 50)), "delivery-p50-ms")
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
