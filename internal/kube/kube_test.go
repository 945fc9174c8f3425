package kube

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/murmur-go/murmur/internal/manifest"
)

// decode reads one rendered YAML document strictly into the Kubernetes API
// type out: an unknown or misspelt field is an error.
func decode(t *testing.T, doc []byte, out any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, out); err != nil {
		t.Fatalf("not a valid object: %v\n%s", err, doc)
	}
}

func docs(t *testing.T, objs []Object) [][]byte {
	t.Helper()
	y, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	parts := bytes.Split(y, []byte("---\n"))
	if len(parts) != len(objs) {
		t.Fatalf("%d documents for %d objects:\n%s", len(parts), len(objs), y)
	}
	return parts
}

func TestJobIsAValidJob(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want func(t *testing.T, j *batchv1.Job)
	}{
		{"advisory script", Spec{Capsule: "acme/report", Version: "1.2.0", Image: "murmur:1", Task: "sum it", DeadlineSecs: 30, Tier: "advisory"},
			func(t *testing.T, j *batchv1.Job) {
				ps := j.Spec.Template.Spec
				if *j.Spec.ActiveDeadlineSeconds != 90 || *j.Spec.BackoffLimit != 0 || ps.RestartPolicy != corev1.RestartPolicyNever {
					t.Fatalf("job spec %+v", j.Spec)
				}
				if ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || ps.HostUsers != nil {
					t.Fatalf("pod security %+v", ps.SecurityContext)
				}
			}},
		{"sealed agent with keys", Spec{Capsule: "acme/lead", Version: "0.1.0", Image: "murmur:1", Tier: "sealed", Namespaces: true, SecretEnv: []string{"ANTHROPIC_API_KEY"}},
			func(t *testing.T, j *batchv1.Job) {
				ps := j.Spec.Template.Spec
				c := ps.Containers[0]
				if j.Spec.ActiveDeadlineSeconds != nil {
					t.Fatalf("an agent's job got a deadline")
				}
				if ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined || ps.HostUsers == nil || *ps.HostUsers ||
					c.SecurityContext.ProcMount == nil || *c.SecurityContext.ProcMount != corev1.UnmaskedProcMount {
					t.Fatalf("sealed security %+v %+v", ps.SecurityContext, c.SecurityContext)
				}
				if *c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
					t.Fatalf("container security %+v", c.SecurityContext)
				}
				e := c.Env[1]
				if e.Name != "ANTHROPIC_API_KEY" || e.ValueFrom.SecretKeyRef.Name != SecretName || e.ValueFrom.SecretKeyRef.Key != "ANTHROPIC_API_KEY" {
					t.Fatalf("key env %+v", e)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Job(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var j batchv1.Job
			decode(t, docs(t, objs)[0], &j)
			c := j.Spec.Template.Spec.Containers[0]
			want := []string{"run", "--with-roost", "--capsule", tc.spec.Capsule, "--capsule-version", tc.spec.Version}
			if tc.spec.Task != "" {
				want = append(want, "--task", tc.spec.Task)
			}
			if strings.Join(c.Args, "\x00") != strings.Join(want, "\x00") || c.Image != tc.spec.Image {
				t.Fatalf("container %q %q", c.Image, c.Args)
			}
			if c.VolumeMounts[0].MountPath != Records || j.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
				t.Fatalf("records volume %+v", c.VolumeMounts)
			}
			if *j.Spec.Template.Spec.SecurityContext.RunAsUser != UID {
				t.Fatalf("uid %v", *j.Spec.Template.Spec.SecurityContext.RunAsUser)
			}
			tc.want(t, &j)
		})
	}
}

func TestBatchIsAnIndexedJobAndItsTasks(t *testing.T) {
	s := Spec{Capsule: "acme/report", Version: "1.2.0", Image: "murmur:1", Parallelism: 4}
	for i := 0; i < 20; i++ {
		s.Tasks = append(s.Tasks, "task number "+string(rune('a'+i)))
	}
	objs, err := Batch(s)
	if err != nil {
		t.Fatal(err)
	}
	d := docs(t, objs)
	var cm corev1.ConfigMap
	decode(t, d[0], &cm)
	var j batchv1.Job
	decode(t, d[1], &j)
	if len(cm.Data) != 20 || cm.Data["task-0"] != "task number a" || cm.Data["task-19"] != "task number t" {
		t.Fatalf("configmap %v", cm.Data)
	}
	if *j.Spec.CompletionMode != batchv1.IndexedCompletion || *j.Spec.Completions != 20 || *j.Spec.Parallelism != 4 {
		t.Fatalf("indexed job %+v", j.Spec)
	}
	c := j.Spec.Template.Spec.Containers[0]
	if c.Args[len(c.Args)-1] != "/tasks/task-$(JOB_COMPLETION_INDEX)" || c.VolumeMounts[1].MountPath != TasksDir {
		t.Fatalf("task wiring %q %+v", c.Args, c.VolumeMounts)
	}
	if v := j.Spec.Template.Spec.Volumes[1]; v.ConfigMap == nil || v.ConfigMap.Name != cm.Name {
		t.Fatalf("tasks volume %+v", v)
	}
	if _, err := Batch(Spec{Capsule: "a/b", Version: "1.0.0", Image: "i"}); err == nil {
		t.Fatal("a batch with no tasks rendered")
	}
}

// A misspelt field is caught by the strict decoding the tests rely on.
func TestStrictDecodingCatchesAMisspeltField(t *testing.T) {
	var j batchv1.Job
	err := yaml.UnmarshalStrict([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  backofLimit: 0\n"), &j)
	if err == nil || !strings.Contains(err.Error(), "backofLimit") {
		t.Fatalf("misspelt field accepted: %v", err)
	}
}

func TestFromManifest(t *testing.T) {
	m, err := manifest.Parse([]byte(`name: acme/lead
version: 0.1.0
artifacts:
  - name: murmur/driver-anthropic
    version: 1.0.0
    runtime: driver
    gateway:
      endpoint: https://api.anthropic.com
      api_key: ${ANTHROPIC_API_KEY}
inference:
  model: claude
  driver:
    artifact: murmur/driver-anthropic
capabilities:
  containment: scoped
  env:
    allow: [GITHUB_TOKEN]
  shell:
    allow: [git]
`), "murmur.yaml", manifest.Options{SkipSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	var s Spec
	s.FromManifest(m)
	if s.Tier != "scoped" || !s.Namespaces || s.DeadlineSecs != 0 || strings.Join(s.SecretEnv, ",") != "ANTHROPIC_API_KEY,GITHUB_TOKEN" {
		t.Fatalf("%+v", s)
	}
}

func TestJobName(t *testing.T) {
	for in, want := range map[string]string{
		"acme/Report_Tool@1.2.0+build":                "murmur-report-tool-1-2-0-build",
		"local/" + strings.Repeat("x", 80) + "@1.0.0": "murmur-" + strings.Repeat("x", 45),
	} {
		full, v, _ := strings.Cut(in, "@")
		if got := jobName(full, v, ""); got != want {
			t.Errorf("jobName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A batch's deadline is each pod's, not the whole Job's.
func TestBatchDeadlineIsPerPod(t *testing.T) {
	objs, err := Batch(Spec{Capsule: "a/b", Version: "1.0.0", Image: "i", Tasks: []string{"x", "y"}, DeadlineSecs: 30})
	if err != nil {
		t.Fatal(err)
	}
	var j batchv1.Job
	decode(t, docs(t, objs)[1], &j)
	if j.Spec.ActiveDeadlineSeconds != nil || j.Spec.Template.Spec.ActiveDeadlineSeconds == nil || *j.Spec.Template.Spec.ActiveDeadlineSeconds != 90 {
		t.Fatalf("deadlines: job %v pod %v", j.Spec.ActiveDeadlineSeconds, j.Spec.Template.Spec.ActiveDeadlineSeconds)
	}
}

// deploy/kubernetes holds what mur kube renders for the examples: the
// orchestrator's job and hello-script's batch of deploy/kubernetes/tasks.
func TestCommittedManifestsAreRendered(t *testing.T) {
	spec := func(dir, name string) Spec {
		m, err := manifest.Parse(must(os.ReadFile(filepath.Join("../..", dir, "murmur.yaml"))), "murmur.yaml", manifest.Options{SkipSecrets: true})
		if err != nil {
			t.Fatal(err)
		}
		s := Spec{Capsule: "local/" + name, Version: "0.1.0", Image: "localhost/murmur:0.1.0"}
		s.FromManifest(m)
		return s
	}
	job := spec("examples/delegation", "orchestrator")
	job.Task = "review the notes"
	batch := spec("examples/hello-script", "hello-script")
	batch.Parallelism = 2
	for i := 1; i <= 3; i++ {
		batch.Tasks = append(batch.Tasks, strings.TrimRight(string(must(os.ReadFile(fmt.Sprintf("../../deploy/kubernetes/tasks/report-%d.md", i)))), "\n"))
	}
	for file, objs := range map[string]func() ([]Object, error){
		"job.yaml":   func() ([]Object, error) { return Job(job) },
		"batch.yaml": func() ([]Object, error) { return Batch(batch) },
	} {
		o, err := objs()
		if err != nil {
			t.Fatal(err)
		}
		want, err := YAML(o)
		if err != nil {
			t.Fatal(err)
		}
		path := "../../deploy/kubernetes/" + file
		if os.Getenv("MURMUR_RENDER_KUBE") == "1" {
			os.WriteFile(path, want, 0o644)
		}
		if got := must(os.ReadFile(path)); !bytes.Equal(got, want) {
			t.Errorf("deploy/kubernetes/%s is not what mur kube renders; render it again with MURMUR_RENDER_KUBE=1 go test ./internal/kube -run TestCommittedManifestsAreRendered", file)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
