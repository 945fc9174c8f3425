// Package kube renders the Kubernetes objects that run an installed capsule
// from Murmur's image: a Job for one root capsule run, and an Indexed Job
// with a ConfigMap of tasks for a batch. It writes manifests and never talks
// to a cluster (kubectl apply does). Past one machine Murmur runs on
// Kubernetes, one container per root capsule; nothing here coordinates
// hosts (docs/deploy.md).
//
// The objects are plain Go values with the Kubernetes API's JSON field names;
// the package's test decodes every rendering strictly into the k8s.io/api
// types, so a misspelt field fails there rather than at kubectl apply.
package kube

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/murmur-go/murmur/internal/manifest"
)

// Home is the image's HOME; the capsules published at build time are under
// Home/.murmur/artifacts, and Records is the directory a volume keeps.
const (
	Home    = "/murmur"
	Records = Home + "/.murmur/records"
	// UID is the image's user and group.
	UID = 1000
	// TasksDir is where a batch's ConfigMap is mounted.
	TasksDir = "/tasks"
	// SecretName is the Secret provider keys are read from.
	SecretName = "murmur-provider-keys"
)

// Spec is what a rendering needs.
type Spec struct {
	Capsule, Version, Image string
	// Task is a job's task text ("" : the capsule's own default input).
	Task string
	// Tasks are a batch's tasks, in order: pod i runs Tasks[i].
	Tasks       []string
	Parallelism int

	// From the capsule's manifest (FromManifest).
	DeadlineSecs int
	Tier         string   // advisory|scoped|sealed: the floor it declares ("" : none)
	Namespaces   bool     // it declares shell.allow or spawn.allow: it needs a network namespace
	SecretEnv    []string // environment variables taken from SecretName
}

// FromManifest fills what a rendering takes from the capsule's manifest:
// a script capsule's deadline, its containment floor, whether it needs namespaces, and the
// provider keys and environment variables it names (env.allow, and each
// gateway.api_key written as ${NAME}).
func (s *Spec) FromManifest(m *manifest.Manifest) {
	c := m.Capabilities
	if m.Inference == nil {
		// A script capsule's run ends by its deadline; an agent's session
		// answers a task in as many calls as it takes, each under the
		// deadline, so its Job gets none.
		s.DeadlineSecs = c.Limits.DeadlineSeconds.Or(manifest.DefaultDeadlineSeconds)
	}
	s.Tier = c.Containment.V
	s.Namespaces = len(c.Shell.Allow) > 0 || len(c.Spawn.Allow) > 0
	env := map[string]bool{}
	for _, n := range c.Env.Allow {
		if !strings.ContainsAny(n, "*?") {
			env[n] = true
		}
	}
	for _, a := range m.Artifacts {
		if a.Gateway != nil {
			for _, sm := range refName.FindAllStringSubmatch(a.Gateway.APIKeyRef, -1) {
				env[sm[1]] = true
			}
		}
	}
	s.SecretEnv = s.SecretEnv[:0]
	for n := range env {
		s.SecretEnv = append(s.SecretEnv, n)
	}
	sort.Strings(s.SecretEnv)
}

var refName = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Object is one Kubernetes object, as its JSON.
type Object = map[string]any

// Job is one root capsule run: a batch/v1 Job with one pod that is never
// retried (a capsule run's side effects are the user's).
func Job(s Spec) ([]Object, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	args := s.runArgs()
	if s.Task != "" {
		args = append(args, "--task", s.Task)
	}
	name := jobName(s.Capsule, s.Version, "")
	job := s.job(name, args, nil, nil)
	return []Object{job}, nil
}

// Batch is many tasks for one capsule: an Indexed Job whose pod i runs task
// task-<i> of a ConfigMap mounted at TasksDir, and that ConfigMap.
func Batch(s Spec) ([]Object, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(s.Tasks) == 0 {
		return nil, fmt.Errorf("a batch needs at least one task")
	}
	p := s.Parallelism
	if p <= 0 {
		p = 1
	}
	name := jobName(s.Capsule, s.Version, "batch")
	data := map[string]any{}
	for i, t := range s.Tasks {
		data[fmt.Sprintf("task-%d", i)] = t
	}
	cm := Object{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": Object{"name": name + "-tasks", "labels": s.labels()},
		"data":     data,
	}
	args := append(s.runArgs(), "--task", TasksDir+"/task-$(JOB_COMPLETION_INDEX)")
	vol := Object{"name": "tasks", "configMap": Object{"name": name + "-tasks"}}
	mount := Object{"name": "tasks", "mountPath": TasksDir, "readOnly": true}
	job := s.job(name, args, vol, mount)
	spec := job["spec"].(Object)
	spec["completionMode"] = "Indexed"
	spec["completions"] = len(s.Tasks)
	spec["parallelism"] = min(p, len(s.Tasks))
	// A failed index fails itself only: the other tasks still run.
	spec["backoffLimitPerIndex"] = 0
	delete(spec, "backoffLimit")
	if d, ok := spec["activeDeadlineSeconds"]; ok {
		// A Job's deadline covers all its pods; each task gets the
		// capsule's deadline on its own pod instead.
		delete(spec, "activeDeadlineSeconds")
		spec["template"].(Object)["spec"].(Object)["activeDeadlineSeconds"] = d
	}
	return []Object{cm, job}, nil
}

func (s Spec) check() error {
	switch {
	case s.Capsule == "" || s.Version == "":
		return fmt.Errorf("the capsule's name and version are required")
	case s.Image == "":
		return fmt.Errorf("the image is required")
	}
	return nil
}

func (s Spec) runArgs() []string {
	return []string{"run", "--with-roost", "--capsule", s.Capsule, "--capsule-version", s.Version}
}

func (s Spec) labels() Object {
	return Object{
		"app.kubernetes.io/name":       "murmur",
		"app.kubernetes.io/instance":   label(manifest.Bare(s.Capsule)),
		"app.kubernetes.io/version":    label(s.Version),
		"app.kubernetes.io/managed-by": "mur-kube",
	}
}

// job is the Job both renderings share; extraVol and extraMount, when not
// nil, are added to the pod.
func (s Spec) job(name string, args []string, extraVol, extraMount Object) Object {
	env := []any{Object{"name": "HOME", "value": Home}}
	for _, n := range s.SecretEnv {
		env = append(env, Object{"name": n, "valueFrom": Object{"secretKeyRef": Object{
			"name": SecretName, "key": n, "optional": true}}})
	}
	mounts := []any{Object{"name": "records", "mountPath": Records}}
	vols := []any{Object{"name": "records", "emptyDir": Object{}}}
	if extraVol != nil {
		vols = append(vols, extraVol)
		mounts = append(mounts, extraMount)
	}
	podSC, ctrSC := s.securityContexts()
	container := Object{
		"name":            "capsule",
		"image":           s.Image,
		"imagePullPolicy": "IfNotPresent",
		"args":            anyList(args),
		"env":             env,
		"volumeMounts":    mounts,
		"securityContext": ctrSC,
		"resources": Object{
			"requests": Object{"cpu": "250m", "memory": "256Mi"},
			"limits":   Object{"cpu": "2", "memory": "2Gi"},
		},
	}
	pod := Object{
		"restartPolicy":   "Never",
		"securityContext": podSC,
		"containers":      []any{container},
		"volumes":         vols,
	}
	if s.Tier == "sealed" {
		pod["hostUsers"] = false // procMount Unmasked needs a user namespace of the pod's own
	}
	spec := Object{
		"backoffLimit": 0,
		"template":     Object{"metadata": Object{"labels": s.labels()}, "spec": pod},
	}
	if s.DeadlineSecs > 0 {
		// The capsule's own deadline, plus a minute for the container's
		// start and the session's end.
		spec["activeDeadlineSeconds"] = s.DeadlineSecs + 60
	}
	return Object{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": Object{"name": name, "labels": s.labels()},
		"spec":     spec,
	}
}

// securityContexts are the pod's and the container's, for the tier the
// capsule asks for. Every tier runs as UID with no privilege escalation and
// no capabilities. A capsule that needs namespaces (a scoped or sealed
// floor, shell or spawn) needs unshare(CLONE_NEWUSER), which the runtime's
// default seccomp profile and AppArmor profile refuse to an unprivileged
// user: those two are Unconfined for it (or a Localhost seccomp profile
// that allows unshare: docs/deploy.md). Sealed also mounts a fresh /proc in
// its pid namespace, which the kernel allows only where /proc is not
// masked: procMount Unmasked, which Kubernetes accepts only in a pod with a
// user namespace of its own (hostUsers: false).
func (s Spec) securityContexts() (pod, ctr Object) {
	pod = Object{"runAsUser": UID, "runAsGroup": UID, "fsGroup": UID, "runAsNonRoot": true,
		"seccompProfile": Object{"type": "RuntimeDefault"}}
	ctr = Object{"allowPrivilegeEscalation": false, "capabilities": Object{"drop": []any{"ALL"}}}
	if s.Namespaces || s.Tier == "scoped" || s.Tier == "sealed" {
		pod["seccompProfile"] = Object{"type": "Unconfined"}
		pod["appArmorProfile"] = Object{"type": "Unconfined"}
	}
	if s.Tier == "sealed" {
		ctr["procMount"] = "Unmasked"
	}
	return pod, ctr
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// jobName is a DNS-1123 label from the capsule's bare name and version.
func jobName(full, version, suffix string) string {
	n := "murmur-" + manifest.Bare(full) + "-" + version
	if suffix != "" {
		n += "-" + suffix
	}
	n = strings.Trim(notDNS.ReplaceAllString(strings.ToLower(n), "-"), "-")
	if len(n) > 52 { // room for the Job controller's pod suffixes
		n = strings.TrimRight(n[:52], "-")
	}
	return n
}

var notLabel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// label is a valid label value (63 characters of [A-Za-z0-9._-], alphanumeric at both ends).
func label(s string) string {
	s = notLabel.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-._")
}

// YAML writes objs as YAML documents separated by "---", keys in a fixed
// order (sorted, as encoding/json sorts a map's).
func YAML(objs []Object) ([]byte, error) {
	var b strings.Builder
	for i, o := range objs {
		js, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		var n yaml.Node
		if err := yaml.Unmarshal(js, &n); err != nil {
			return nil, err
		}
		plain(&n)
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&n); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
	}
	return []byte(b.String()), nil
}

// plain drops the flow style yaml.v3 keeps from the JSON it read, so the
// documents read as hand-written YAML.
func plain(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
	for _, c := range n.Content {
		plain(c)
	}
}

// JSON writes objs as one JSON list.
func JSON(objs []Object) ([]byte, error) {
	return json.MarshalIndent(objs, "", "  ")
}
