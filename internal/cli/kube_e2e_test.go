package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
)

// mur kube renders for an installed capsule and refuses what it cannot
// render, each with its code (docs/deploy.md; the objects themselves are
// checked against the Kubernetes API types in internal/kube).
func TestKubeCommand(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	e2e.PublishFixture(t, homeDir, filepath.Join(base, "flood"), "tool-flood", "name: acme/flood\nversion: 1.0.0\nruntime: tool\n")
	script := filepath.Join(base, "hello-script")
	e2e.CopyDir(t, filepath.Join(e2e.RepoRoot(), "examples", "hello-script"), script)
	e2e.PublishDir(t, homeDir, script)
	tasks := filepath.Join(base, "tasks")
	os.Mkdir(tasks, 0o755)
	for _, n := range []string{"b.md", "a.md", "skip.txt"} {
		os.WriteFile(filepath.Join(tasks, n), []byte("task "+n+"\n"), 0o644)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"job", []string{"kube", "job", "--capsule", "local/hello-script", "--capsule-version", "0.1.0", "--image", "murmur:1", "--task", "go"}, 0, "kind: Job"},
		{"batch json", []string{"kube", "batch", "--capsule", "hello-script", "--capsule-version", "0.1.0", "--image", "murmur:1", "--tasks", tasks, "--json"}, 0, `"task-0": "task a.md"`},
		{"a tool", []string{"kube", "job", "--capsule", "acme/flood", "--capsule-version", "1.0.0", "--image", "murmur:1"}, 1, "error[E-RUN-002]: acme/flood is a tool artifact, not a capsule"},
		{"not installed", []string{"kube", "job", "--capsule", "acme/none", "--capsule-version", "1.0.0", "--image", "murmur:1"}, 1, "error[E-RUN-008]: missing artifacts: acme/none@1.0.0 is not installed"},
		{"no image", []string{"kube", "job", "--capsule", "acme/flood", "--capsule-version", "1.0.0"}, 2, "--capsule, --capsule-version and --image are required"},
		{"no tasks dir", []string{"kube", "batch", "--capsule", "local/hello-script", "--capsule-version", "0.1.0", "--image", "i", "--tasks", filepath.Join(base, "none")}, 1, "error[E-IO-001]: cannot read the tasks directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runMur(t, homeDir, base, nil, tc.args...)
			if r.Code != tc.code || !strings.Contains(r.Stdout+r.Stderr, tc.want) {
				t.Fatalf("exit %d (want %d), want %q in:\n%s%s", r.Code, tc.code, tc.want, r.Stdout, r.Stderr)
			}
			if tc.name == "batch json" {
				var objs []map[string]any
				if err := json.Unmarshal([]byte(r.Stdout), &objs); err != nil || len(objs) != 2 || objs[0]["kind"] != "ConfigMap" {
					t.Fatalf("json: %v %v", err, objs)
				}
				if d := objs[0]["data"].(map[string]any); len(d) != 2 || d["task-1"] != "task b.md" {
					t.Fatalf("tasks %v", d)
				}
			}
		})
	}
}
