package delegate

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/testbin"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// TestChildWatchFromReady: the child watch counts from the moment the
// child reported itself ready (its --json line), not from its task's
// delivery, so the delivery's time is not spent out of the deadline. An
// agent child (the real mur on a replay transcript) is launched through
// the real mur-roost; its task's delivery takes a round trip to its door
// after the ready line, and the watch's deadline is the ready line's time
// plus the deadline to the nanosecond.
func TestChildWatchFromReady(t *testing.T) {
	mur, roostBin := testbin.Path(t, "./cmd/mur"), testbin.Path(t, "./cmd/mur-roost")
	homeDir, work := t.TempDir(), t.TempDir()
	testbin.ShareCompileCache(t, homeDir)
	env := []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH")}
	publish := func(dir, manifest string, files map[string]string) {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(manifest), 0o644)
		for name, body := range files {
			os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}
		for _, c := range []string{"build", "publish"} {
			cmd := exec.Command(mur, c)
			cmd.Dir, cmd.Env = dir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("mur %s in %s: %v\n%s", c, dir, err, out)
			}
		}
	}
	wdir := filepath.Join(work, "worker")
	publish(wdir, `name: worker
version: 1.0.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: `+filepath.Join(wdir, "transcript.yaml")+`
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Work.
lifecycle:
  after_task: sleep
`, map[string]string{"transcript.yaml": "version: 1\nresponses:\n  - content:\n      - {type: text, text: \"done\"}\n"})
	delegator, err := os.ReadFile(filepath.Join(testbin.Root(), "testdata/components/capsule-delegator/capsule-delegator.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	publish(filepath.Join(work, "parent"), "name: parent\nversion: 1.0.0\ncapabilities:\n  spawn:\n    allow: [local/worker]\n",
		map[string]string{"capsule-delegator.wasm": string(delegator)})

	roost := exec.Command(roostBin, "--port", "0", "--spawn-allow", "local/parent")
	roost.Env = env
	out, _ := roost.StdoutPipe()
	if err := roost.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { roost.Process.Signal(syscall.SIGTERM); roost.Wait() })
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
		t.Fatal(err)
	}
	records := filepath.Join(work, "records")
	os.MkdirAll(records, 0o700)
	tw, err := trace.Create(filepath.Join(records, trace.FileName), sid, trace.Options{})
	if err != nil {
		t.Fatal(err)
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
	const deadline = 10 * time.Minute
	rt, err := NewScript(Config{RoostURL: roostURL, Credential: cred, SessionID: sid, Name: "local/parent", Version: "1.0.0",
		RecordsDir: records, RuntimeDir: filepath.Join(work, "runtime"), SpawnAllow: []string{"local/worker"},
		Lookup: lookup, MurBinary: mur, Deadline: deadline, Recorder: trace.NewRecorder(tw, nil, time.Now(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(roostapi.StatusComplete)
	var got *delegation
	rt.onStarted = func(_ time.Time, d *delegation) { got = d }
	in := `{"capsule":"worker","version":"1.0.0","task":"answer"}`
	res, err := rt.Tool().Invoke(context.Background(), wit.ToolInput{Data: &in})
	if err != nil || res.Status != wit.StatusPassed || got == nil {
		t.Fatalf("delegate-task: %v %v", err, res.Data)
	}
	if got.script || !got.tDelivered.After(got.tReady) {
		t.Fatalf("want an agent child delivered after its ready line: ready %v, delivered %v", got.tReady, got.tDelivered)
	}
	if want := got.tReady.Add(deadline); !got.watchUntil.Equal(want) {
		t.Errorf("the child watch ends at %v, want the ready line's time plus %v (%v); the delivery took %v",
			got.watchUntil, deadline, want, got.tDelivered.Sub(got.tReady))
	}
}
