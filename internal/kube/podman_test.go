package kube

// End-to-end tests of the image and the container recipe (docs/deploy.md),
// with podman: scripts/image.sh builds the image, podman runs it. They skip,
// saying why, where podman cannot run containers (CI installs podman and
// runc and writes the container defaults this machine needs: .ci/run).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const testImage = "localhost/murmur:e2e"

// imageCapsules are published into the test image: the delegation example
// (the recipe) and hello-script with its tool (a batch: it answers with its task).
var imageCapsules = []string{"examples/delegation", "examples/delegation/worker", "examples/delegation/reviewer",
	"examples/echo-tool", "examples/hello-script"}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// podman runs podman with args and returns its stdout, stderr and error.
func podman(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command("podman", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

var (
	imageOnce sync.Once
	imageErr  error
	imageSkip string
)

// needImage builds testImage once per test process (scripts/image.sh with
// the delegation example's three capsules), or skips.
func needImage(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the image build takes minutes")
	}
	imageOnce.Do(func() {
		if _, err := exec.LookPath("podman"); err != nil {
			imageSkip = "podman is not installed (apt-get install podman runc)"
			return
		}
		if os.Geteuid() != 0 {
			imageSkip = "podman runs containers here as root only"
			return
		}
		if _, err := exec.LookPath("busybox"); err != nil {
			imageSkip = "the image's scratch base needs Debian's busybox-static"
			return
		}
		if _, err := exec.LookPath("file"); err != nil {
			imageSkip = "scripts/image.sh checks the binaries with the file command, which is not installed"
			return
		}
		imageErr = buildImage(t, testImage)
		if imageErr == nil {
			if _, stderr, err := podman("run", "--rm", "--entrypoint", "/bin/true", testImage); err != nil {
				imageSkip = "podman cannot run a container on this machine: " + lastLine(stderr)
			}
		}
	})
	if imageSkip != "" {
		t.Skip(imageSkip)
	}
	if imageErr != nil {
		t.Fatal(imageErr)
	}
}

func buildImage(t *testing.T, tag string) error {
	args := append([]string{"--tag", tag, "--capsules"}, imageCapsules...)
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "image.sh"), args...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/image.sh: %v\n%s", err, out)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func imageID(t *testing.T, tag string) string {
	t.Helper()
	out, stderr, err := podman("image", "inspect", "--format", "{{.Id}}", tag)
	if err != nil {
		t.Fatalf("inspect %s: %v %s", tag, err, stderr)
	}
	return strings.TrimSpace(out)
}

// Building twice from the same inputs gives the same image.
func TestImageIsReproducible(t *testing.T) {
	needImage(t)
	const again = "localhost/murmur:e2e-again"
	if err := buildImage(t, again); err != nil {
		t.Fatal(err)
	}
	defer podman("rmi", again)
	if a, b := imageID(t, testImage), imageID(t, again); a != b {
		t.Fatalf("two builds of the same inputs: %s and %s", a, b)
	}
	out, _, err := podman("image", "inspect", "--format", `{{index .Labels "org.opencontainers.image.version"}} {{.Size}} {{.Config.User}} {{range .Config.Env}}{{.}} {{end}}`, testImage)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out)
	if f[0] != "0.1.0" || f[2] != "1000:1000" || !strings.Contains(out, "HOME=/murmur") {
		t.Fatalf("image config %q", out)
	}
	t.Logf("image size: %s bytes", f[1])
	// Every binary is static: no libc at run time (the base has none).
	for _, b := range []string{"mur", "mur-roost", "mur-contain", "mur-driver"} {
		if _, stderr, err := podman("run", "--rm", "--entrypoint", "/usr/local/bin/"+b, testImage, "--version"); err != nil {
			t.Errorf("%s does not start in a scratch image: %v %s", b, err, stderr)
		}
	}
}

var sessionLine = regexp.MustCompile(`(?m)^(ses_[0-9a-f]+): (\w+)$`)

// The spec's container recipe: the daemon, a parent and the children it
// delegates to in one container, the answer on stdout (podman logs), the
// records on a volume that outlives the container.
func TestContainerRecipe(t *testing.T) {
	needImage(t)
	vol := "murmur-e2e-records-" + fmt.Sprint(time.Now().UnixNano())
	if _, stderr, err := podman("volume", "create", vol); err != nil {
		t.Fatal(err, stderr)
	}
	defer podman("volume", "rm", "-f", vol)
	out, stderr, err := podman("run", "--rm", "-v", vol+":/murmur/.murmur/records", testImage,
		"run", "--with-roost", "--capsule", "local/orchestrator", "--capsule-version", "0.1.0", "--task", "review the notes")
	if err != nil {
		t.Fatalf("recipe: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	if !strings.HasPrefix(lastLine(out), "Report: 2 delegations, both ended ok.") {
		t.Fatalf("the answer is not last on stdout:\n%s", out)
	}
	m := sessionLine.FindStringSubmatch(stderr)
	if m == nil || m[2] != "ok" {
		t.Fatalf("no ok session on stderr:\n%s", stderr)
	}
	// The records are on the volume: a second container reads the tree.
	tree, stderr, err := podman("run", "--rm", "-v", vol+":/murmur/.murmur/records", testImage, "trace", "show", "--tree", m[1])
	if err != nil {
		t.Fatalf("trace show --tree from the volume: %v %s", err, stderr)
	}
	for _, want := range []string{m[1], "delegation-worker@0.1.0", "delegation-reviewer@0.1.0"} {
		if !strings.Contains(tree, want) {
			t.Fatalf("the tree read from the volume lacks %s:\n%s", want, tree)
		}
	}
}

// A container that refuses new namespaces refuses a capsule that declares
// spawn.allow with E-CAP-005, before any session exists.
func TestContainerWithoutNamespacesRefusesSpawn(t *testing.T) {
	needImage(t)
	vol := "murmur-e2e-nons-" + fmt.Sprint(time.Now().UnixNano())
	if _, stderr, err := podman("volume", "create", vol); err != nil {
		t.Fatal(err, stderr)
	}
	defer podman("volume", "rm", "-f", vol)
	profile := filepath.Join(repoRoot(t), "deploy", "seccomp", "no-namespaces.json")
	out, stderr, err := podman("run", "--rm", "--security-opt", "seccomp="+profile, "-v", vol+":/murmur/.murmur/records", testImage,
		"run", "--with-roost", "--capsule", "local/orchestrator", "--capsule-version", "0.1.0", "--task", "review the notes")
	if err == nil || !strings.Contains(stderr, "error[E-CAP-005]") {
		t.Fatalf("want E-CAP-005; err %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	if sessionLine.MatchString(stderr) {
		t.Fatalf("a session was reported:\n%s", stderr)
	}
	ls, _, err := podman("run", "--rm", "--entrypoint", "/bin/find", "-v", vol+":/murmur/.murmur/records", testImage, "/murmur/.murmur/records", "-name", "trace.jsonl")
	if err != nil || strings.TrimSpace(ls) != "" {
		t.Fatalf("a trace was written: %q %v", ls, err)
	}
}

// podJob turns a rendered Job into a Pod of its template, as the Job
// controller would make (podman kube play plays Pods, not Jobs), with env
// added to its container.
func podJob(t *testing.T, job []byte, name string, env map[string]string) []byte {
	t.Helper()
	var j map[string]any
	if err := yaml.Unmarshal(job, &j); err != nil {
		t.Fatal(err)
	}
	tmpl := j["spec"].(map[string]any)["template"].(map[string]any)
	spec := tmpl["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	for k, v := range env {
		c["env"] = append(c["env"].([]any), map[string]any{"name": k, "value": v})
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": tmpl["metadata"].(map[string]any)["labels"]}, "spec": spec}
	out, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitPod waits for the pod's capsule container to exit and returns its
// logs (stdout and stderr together).
func waitPod(t *testing.T, pod string) string {
	t.Helper()
	out, err := waitPodLogs(pod)
	if err != nil {
		t.Fatalf("%s: %v\n%s", pod, err, out)
	}
	return out
}

// mur kube job's pod template, played as a Pod, runs the capsule: the
// answer is in its logs.
func TestKubeJobPlaysAsAPod(t *testing.T) {
	needImage(t)
	job, stderr, err := podman("run", "--rm", testImage, "kube", "job", "--capsule", "local/orchestrator", "--capsule-version", "0.1.0",
		"--image", testImage, "--task", "review the notes")
	if err != nil {
		t.Fatalf("mur kube job: %v %s", err, stderr)
	}
	pod := "murmur-e2e-job"
	f := filepath.Join(t.TempDir(), "pod.yaml")
	os.WriteFile(f, podJob(t, []byte(job), pod, nil), 0o644)
	podman("pod", "rm", "-f", pod)
	if out, stderr, err := podman("kube", "play", f); err != nil {
		t.Fatalf("kube play: %v\n%s\n%s", err, out, stderr)
	}
	defer podman("kube", "down", f)
	if out := waitPod(t, pod); !strings.Contains(out, "Report: 2 delegations, both ended ok.") {
		t.Fatalf("the pod's logs hold no answer:\n%s", out)
	}
}

// mur kube batch's Indexed Job, its pods played with podman as the Job
// controller would start them (JOB_COMPLETION_INDEX set, $(VAR) in args
// expanded as the kubelet does), 20 tasks at parallelism 4: each pod answers
// its own task, none lost.
func TestKubeBatchPlaysItsPods(t *testing.T) {
	needImage(t)
	const n = 20
	parallelism := 4
	if v, err := strconv.Atoi(os.Getenv("MURMUR_BATCH_PARALLELISM")); err == nil && v > 0 {
		parallelism = v // docs/benchmarks.md's scaling figure: 1 against 4
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	tasks := filepath.Join(dir, "tasks")
	os.Mkdir(tasks, 0o755)
	for i := 0; i < n; i++ {
		os.WriteFile(filepath.Join(tasks, fmt.Sprintf("t%02d.md", i)), []byte(fmt.Sprintf("batch task %02d\n", i)), 0o644)
	}
	out, stderr, err := podman("run", "--rm", "-v", tasks+":/in:ro", testImage, "kube", "batch", "--capsule", "local/hello-script",
		"--capsule-version", "0.1.0", "--image", testImage, "--tasks", "/in", "--parallelism", fmt.Sprint(parallelism))
	if err != nil {
		t.Fatalf("mur kube batch: %v %s", err, stderr)
	}
	docs := strings.SplitN(out, "---\n", 2)
	if len(docs) != 2 {
		t.Fatalf("want a ConfigMap and a Job:\n%s", out)
	}
	cm, job := docs[0], docs[1]
	var spec struct {
		Spec struct {
			Completions, Parallelism int
		}
	}
	if err := yaml.Unmarshal([]byte(job), &spec); err != nil || spec.Spec.Completions != n || spec.Spec.Parallelism != parallelism {
		t.Fatalf("job spec %+v %v", spec, err)
	}
	start := time.Now()
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	answers := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			idx := fmt.Sprint(i)
			pod := podJob(t, []byte(job), "murmur-e2e-batch-"+idx, map[string]string{"JOB_COMPLETION_INDEX": idx})
			pod = bytes.ReplaceAll(pod, []byte("$(JOB_COMPLETION_INDEX)"), []byte(idx))
			cmName := regexp.MustCompile(`(?m)^  name: (\S+)$`).FindStringSubmatch(cm)[1]
			// Each play gets the ConfigMap under a name of its own.
			mine := strings.Replace(cm, "name: "+cmName, "name: "+cmName+"-"+idx, 1)
			pod = bytes.ReplaceAll(pod, []byte("name: "+cmName), []byte("name: "+cmName+"-"+idx))
			f := filepath.Join(dir, "pod-"+idx+".yaml")
			os.WriteFile(f, []byte(mine+"---\n"+string(pod)), 0o644)
			podman("pod", "rm", "-f", "murmur-e2e-batch-"+idx)
			if out, stderr, err := podman("kube", "play", f); err != nil {
				answers[i] = fmt.Sprintf("kube play: %v %s %s", err, out, stderr)
				return
			}
			defer podman("kube", "down", f)
			answers[i], _ = waitPodLogs("murmur-e2e-batch-" + idx)
		}()
	}
	wg.Wait()
	t.Logf("%d tasks at parallelism %d: %s", n, parallelism, time.Since(start).Round(time.Millisecond))
	for i, a := range answers {
		if want := fmt.Sprintf("task: batch task %02d", i); !strings.Contains(a, want) {
			t.Errorf("pod %d did not answer %q:\n%s", i, want, a)
		}
	}
}

// waitPodLogs is waitPod for goroutines: errors are in the text.
func waitPodLogs(pod string) (string, error) {
	ctr := pod + "-capsule"
	if _, stderr, err := podman("wait", ctr); err != nil {
		return "wait: " + stderr, err
	}
	out, stderr, err := podman("logs", ctr)
	return out + stderr, err
}

// A container killed mid-run leaves a records volume whose traces are whole
// up to the kill: every line a complete JSON object (the kill -9 promise,
// in a container).
func TestKilledContainerLeavesWholeTraces(t *testing.T) {
	needImage(t)
	vol := "murmur-e2e-kill-" + fmt.Sprint(time.Now().UnixNano())
	name := vol
	if _, stderr, err := podman("volume", "create", vol); err != nil {
		t.Fatal(err, stderr)
	}
	defer podman("volume", "rm", "-f", vol)
	if _, stderr, err := podman("run", "-d", "--name", name, "-v", vol+":/murmur/.murmur/records", testImage,
		"run", "--with-roost", "--capsule", "local/orchestrator", "--capsule-version", "0.1.0", "--task", "review the notes"); err != nil {
		t.Fatal(err, stderr)
	}
	defer podman("rm", "-f", name)
	// Kill mid-run: once the session's running record exists, and a moment
	// later, while its delegations run.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, _, err := podman("exec", name, "/bin/ls", "/murmur/.murmur/running")
		if err == nil && strings.Contains(out, "ses_") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if _, stderr, err := podman("kill", "--signal", "KILL", name); err != nil {
		if !strings.Contains(stderr, "state exited") {
			t.Fatalf("kill: %v %s", err, stderr)
		}
		t.Log("the run ended before the kill: its traces are checked all the same")
	}
	podman("wait", name)
	out, stderr, err := podman("run", "--rm", "--entrypoint", "/bin/sh", "-v", vol+":/r", testImage, "-c",
		`for f in $(find /r -name trace.jsonl); do echo "== $f"; cat "$f"; done`)
	if err != nil {
		t.Fatalf("read the traces: %v %s", err, stderr)
	}
	files, lines := 0, 0
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.HasPrefix(l, "== ") {
			files++
			continue
		}
		lines++
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("a torn trace line: %q: %v", l, err)
		}
	}
	if files == 0 || lines == 0 {
		t.Fatalf("no trace on the volume:\n%s", out)
	}
	t.Logf("%d traces, %d whole lines after the kill", files, lines)
}
