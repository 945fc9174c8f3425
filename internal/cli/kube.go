package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/kube"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

func init() { register(newKubeCmd) }

type kubeFlags struct {
	capsule, version, image string
	asJSON                  bool
}

func (f *kubeFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.capsule, "capsule", "", "the installed capsule `FULLNAME` (scope/name) the image holds")
	fl.StringVar(&f.version, "capsule-version", "", "the capsule's `VERSION`")
	fl.StringVar(&f.image, "image", "", "the `IMAGE` (built by scripts/image.sh) the pods run")
	fl.BoolVar(&f.asJSON, "json", false, "print the objects as one JSON list instead of YAML")
}

func newKubeCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kube",
		Short: "Render the Kubernetes objects that run an installed capsule (job, batch)",
		Long: `Render the Kubernetes objects that run an installed capsule from Murmur's image,
to stdout as YAML documents separated by "---" (--json: one JSON list). mur kube
never talks to a cluster: pipe its output to kubectl apply -f -.

The capsule must be installed here too (the global store, or the project's):
its manifest gives the Job its deadline (a script capsule's), the security
context its containment needs, and the provider keys and environment
variables it names, read from the Secret murmur-provider-keys.`,
		Args: exactArgs(0),
	}
	cmd.AddCommand(newKubeJobCmd(stdout), newKubeBatchCmd(stdout))
	return cmd
}

func newKubeJobCmd(stdout io.Writer) *cobra.Command {
	var f kubeFlags
	var task string
	cmd := &cobra.Command{
		Use:   "job",
		Short: "A batch/v1 Job for one root capsule run",
		Long: `A batch/v1 Job for one root capsule run: one pod, never retried (backoffLimit 0,
restartPolicy Never), running mur run --with-roost with the capsule and the task
(--task: the text, or a file whose contents are the text). The records directory
is an emptyDir volume: replace it with a PersistentVolumeClaim to keep them.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.spec()
			if err != nil {
				return err
			}
			if s.Task, err = taskText(task); err != nil {
				return err
			}
			objs, err := kube.Job(s)
			if err != nil {
				return usageError{err}
			}
			return f.print(stdout, objs)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&task, "task", "", "the task: `TEXT`, or the path of a file holding it")
	return cmd
}

func newKubeBatchCmd(stdout io.Writer) *cobra.Command {
	var f kubeFlags
	var dir string
	var parallelism int
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "An Indexed Job running one task per pod, with the ConfigMap of its tasks",
		Long: `An Indexed Job running the capsule once per task, and the ConfigMap holding the
tasks: the files DIR/*.md, sorted by name, become task-0 ... task-<N-1>, and pod i
runs task-i (completions N, parallelism P). A failed pod fails its own index
only.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.spec()
			if err != nil {
				return err
			}
			if dir == "" {
				return usageError{fmt.Errorf("--tasks DIR is required")}
			}
			if s.Tasks, err = batchTasks(dir); err != nil {
				return err
			}
			s.Parallelism = parallelism
			objs, err := kube.Batch(s)
			if err != nil {
				return usageError{err}
			}
			return f.print(stdout, objs)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&dir, "tasks", "", "the `DIR` whose *.md files are the tasks")
	cmd.Flags().IntVar(&parallelism, "parallelism", 1, "how many pods run at once (`P`)")
	return cmd
}

// spec resolves the capsule (as mur run --capsule does) and fills a Spec.
func (f *kubeFlags) spec() (kube.Spec, error) {
	if f.capsule == "" || f.version == "" || f.image == "" {
		return kube.Spec{}, usageError{fmt.Errorf("--capsule, --capsule-version and --image are required")}
	}
	full, err := manifest.NormalizeName(f.capsule)
	if err != nil {
		return kube.Spec{}, usageError{err}
	}
	homeDir, err := home.Dir()
	if err != nil {
		return kube.Spec{}, err
	}
	chain, err := store.ChainFor("", homeDir)
	if err != nil {
		return kube.Spec{}, err
	}
	r, err := chain.Resolve(full, f.version, manifest.Options{SkipSecrets: true})
	if err != nil {
		if store.IsNotFound(err) {
			return kube.Spec{}, diag.New("E-RUN-008", "missing artifacts: %s@%s is not installed", full, f.version).
				WithHint("publish its .mur.zip into the global store (mur publish), as the image does at build time")
		}
		return kube.Spec{}, err
	}
	if k := r.Manifest.RuntimeKind(); k != manifest.RuntimeCapsule {
		return kube.Spec{}, diag.New("E-RUN-002", "%s is a %s artifact, not a capsule: only capsules run", full, k).
			WithHint("name the capsule that declares it")
	}
	s := kube.Spec{Capsule: full, Version: f.version, Image: f.image}
	s.FromManifest(r.Manifest)
	return s, nil
}

func (f *kubeFlags) print(w io.Writer, objs []kube.Object) error {
	out, err := kube.YAML(objs)
	if f.asJSON {
		out, err = kube.JSON(objs)
		out = append(out, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// taskText is --task: a file's contents when it names a file, else itself.
func taskText(task string) (string, error) {
	if task == "" {
		return "", nil
	}
	if st, err := os.Stat(task); err == nil && st.Mode().IsRegular() {
		b, err := os.ReadFile(task)
		if err != nil {
			return "", diag.Wrap(err, "E-IO-001", "cannot read the task file %s", task)
		}
		return string(b), nil
	}
	return task, nil
}

// batchTasks reads DIR/*.md sorted by name.
func batchTasks(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read the tasks directory %s", dir)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, usageError{fmt.Errorf("%s holds no *.md task files", dir)}
	}
	tasks := make([]string, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, diag.Wrap(err, "E-IO-001", "cannot read the task file %s", n)
		}
		tasks = append(tasks, strings.TrimRight(string(b), "\n"))
	}
	return tasks, nil
}
