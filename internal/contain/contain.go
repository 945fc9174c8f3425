// Package contain holds how the kernel holds a capsule's native commands
// (docs/containment.md): the host probe, one Plan per tier as plain data, and the
// code that applies a plan — a re-exec'd init helper of the running binary
// that sets up namespaces and a composed root (sealed), Landlock (sealed,
// scoped), rlimits, dropped capabilities, no_new_privs and a seccomp
// allow-list (every Linux tier), then starts the command in a session of
// its own and stays as its init (pid 1 of a PID namespace wherever one can
// be made), forwarding signals and reporting the command's own end.
//
// A binary that launches contained commands must call MaybeInit first thing
// in main (a test binary: in TestMain), because the helper is that binary
// started again with a hidden first argument.
//
// A plan with an Egress also runs the command in a network namespace of its
// own with only loopback; the helper creates the egress proxy's listener
// inside it (ProxyAddr) and hands it out to the runtime, which serves it
// from the host's namespace (the proxy itself is package contain/egress).
//
// Memory and processes are capped through cgroups where this host lets the
// runtime make them (ResourcePlane: v2 where its controllers are delegated,
// else v1 as root, else the rlimits alone); each command gets cgroups of
// its own, which also end whatever it left running once it has exited.
//
// The floor decision itself is launch's (Report.Lacks gives it the blocker
// text for E-CAP-003).
package contain

import (
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strings"
)

// Containment classes, lowest first (the manifest's words).
const (
	Advisory = "advisory"
	Scoped   = "scoped"
	Sealed   = "sealed"
)

// Mechanism strings, as --explain-scope prints them.
const (
	MechSealed      = "mountns+pivot_root+landlock+seccomp"
	MechScoped      = "landlock+seccomp"
	MechSeccompOnly = "seccomp-only"
	MechNone        = "none"
)

// Rank orders classes: advisory 0, scoped 1, sealed 2, anything else -1.
func Rank(class string) int {
	switch class {
	case Advisory:
		return 0
	case Scoped:
		return 1
	case Sealed:
		return 2
	}
	return -1
}

// SystemDirs are the directories every tier lets a command read and exec
// from (docs/containment.md "What every tier's view contains"), absent
// ones skipped.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// SystemEtc is the fixed list from /etc every tier lets a command read;
// entries ending in "*" are globs, in "/" directories. Never the rest of /etc.
var SystemEtc = []string{
	"ld.so.cache", "ld.so.conf*", "ssl/", "ca-certificates*", "resolv.conf", "hosts",
	"nsswitch.conf", "localtime", "passwd", "group", "terminfo/", "alternatives/",
}

// Resources are capabilities.resources.*; zero fields take the spec's
// defaults (docs/containment.md "Resources").
type Resources struct {
	MaxProcesses     uint64 `json:"max_processes"`
	MaxOpenFiles     uint64 `json:"max_open_files"`
	MaxFileSizeBytes uint64 `json:"max_file_size_bytes"`
	CPUSeconds       uint64 `json:"cpu_seconds"`
	MemoryBytes      uint64 `json:"memory_bytes"`
	// CgroupMemoryBytes and CgroupPidsMax are the cgroup caps, where a
	// cgroup plane holds (ResourcePlane).
	CgroupMemoryBytes uint64 `json:"cgroup_memory_bytes"`
	CgroupPidsMax     uint64 `json:"cgroup_pids_max"`
}

// Resource planes: what caps a command's memory and processes.
const (
	PlaneV2      = "cgroup v2"
	PlaneV1      = "cgroup v1"
	PlaneRlimits = "rlimits"
)

// DefaultResources are the defaults of capabilities.resources.*
// (docs/containment.md "Resources").
var DefaultResources = Resources{
	MaxProcesses:     128,
	MaxOpenFiles:     1024,
	MaxFileSizeBytes: 4 << 30,
	CPUSeconds:       3600,
	MemoryBytes:      2 << 30,

	CgroupMemoryBytes: 4 << 30,
	CgroupPidsMax:     256,
}

func (r Resources) withDefaults() Resources {
	d := DefaultResources
	or := func(v, def uint64) uint64 {
		if v == 0 {
			return def
		}
		return v
	}
	return Resources{
		MaxProcesses:     or(r.MaxProcesses, d.MaxProcesses),
		MaxOpenFiles:     or(r.MaxOpenFiles, d.MaxOpenFiles),
		MaxFileSizeBytes: or(r.MaxFileSizeBytes, d.MaxFileSizeBytes),
		CPUSeconds:       or(r.CPUSeconds, d.CPUSeconds),
		MemoryBytes:      or(r.MemoryBytes, d.MemoryBytes),

		CgroupMemoryBytes: or(r.CgroupMemoryBytes, d.CgroupMemoryBytes),
		CgroupPidsMax:     or(r.CgroupPidsMax, d.CgroupPidsMax),
	}
}

// Input is what a session knows when it builds a plan. Paths must be
// absolute; they are cleaned and have their symlinks resolved by NewPlan.
type Input struct {
	Class      string // advisory, scoped or sealed: the tier to apply
	WorkFolder string // the work folder, or filesystem.scope: read-write
	// Within, when set, is the work folder WorkFolder (a filesystem.scope)
	// must stay inside once its symlinks are resolved: a scope that is a
	// link out of the work folder is refused, never granted.
	Within     string
	Home       string   // the session's HOME, <records dir>/home: read-write
	RuntimeDir string   // the session's runtime dir: read-only
	RecordsDir string   // the records dir: read-only but for Home
	Tools      []string // binaries outside the system dirs a command may run (shell.allow): read + exec
	// InstallDirs are folders a command's program is installed in (an MCP
	// server's mcp.install_dirs): read + exec, never write, at every tier.
	InstallDirs []string
	WorkdirExec bool      // filesystem.workdir_exec
	UnixSockets bool      // network.unix_sockets
	Resources   Resources // capabilities.resources.*
	// Egress, when set, puts every command in a network namespace of its
	// own with only loopback, the proxy listening inside at ProxyAddr
	// (a capsule with a non-empty shell.allow or spawn.allow;
	// docs/containment.md "The network namespace and the egress proxy"). nil: the host's network.
	Egress Egress
}

// Egress is the runtime's egress proxy as a command's network namespace
// needs it. Serve answers connections on ln, a listener created inside the
// namespace and handed out, until ln is closed; the runtime closes it when
// the command's process has ended.
type Egress interface {
	Serve(ln net.Listener) error
}

// ProxyAddr is where the egress proxy listens inside each command's network
// namespace. Every namespace is its own, so one fixed address serves all.
const ProxyAddr = "127.0.0.1:3128"

// Path is one entry of a plan's filesystem view.
type Path struct {
	Path  string `json:"path"`
	Write bool   `json:"write,omitempty"`
	Exec  bool   `json:"exec,omitempty"`
	Dir   bool   `json:"dir"`
	// Synthetic, when set, is the file's content in a sealed root instead of
	// the host's file (passwd, group).
	Synthetic string `json:"synthetic,omitempty"`
}

// Rlimit is one resource limit the helper sets before exec.
type Rlimit struct {
	Name     string `json:"name"` // the manifest key it comes from
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// Plan is one tier as data: what the command sees and may do. It is built
// once by NewPlan and applied in the helper by per-mechanism code.
type Plan struct {
	Class     string `json:"class"`
	Mechanism string `json:"mechanism"`
	// Namespaces: user + mount + pid namespaces over a composed root (sealed).
	Namespaces bool `json:"namespaces"`
	// Landlock: the Paths are enforced with Landlock (sealed, scoped).
	Landlock bool `json:"landlock"`
	// Paths is the filesystem view, parents before children.
	Paths []Path `json:"paths"`
	// Devices are the /dev nodes a command may use.
	Devices []string `json:"devices"`
	// WorkFolder is where a command starts.
	WorkFolder string `json:"work_folder"`
	// ReadOnly are directories inside a writable path of a sealed root
	// that are bound again, read-only, over themselves: the work folder's
	// peer-in/, which only the runtime writes. Each is bound only when it
	// is a real directory (never through a symbolic link) at the command's
	// start.
	ReadOnly []string `json:"read_only,omitempty"`
	// Seccomp is the allow-list, applied last at every Linux tier.
	Seccomp SeccompPlan `json:"seccomp"`
	// SeccompBPF is Seccomp assembled, once per plan (Linux).
	SeccompBPF []uint64 `json:"seccomp_bpf,omitempty"`
	Rlimits    []Rlimit `json:"rlimits"`
	// Cgroup is the cgroup caps each command gets where a cgroup plane
	// holds.
	Cgroup CgroupPlan `json:"cgroup"`
	// Env is set over the caller's environment (HOME).
	Env []string `json:"env"`
	// NetNS: a network namespace with only loopback, the proxy's listener
	// made there and handed out (Input.Egress).
	NetNS bool `json:"netns"`

	egress Egress
}

// CgroupPlan is what each command's cgroups cap.
type CgroupPlan struct {
	MemoryBytes uint64 `json:"memory_bytes"`
	PidsMax     uint64 `json:"pids_max"`
}

// SeccompPlan is the seccomp allow-list: default deny (EPERM), the foreign
// (i386, x32) entries refused, socket domains narrowed.
type SeccompPlan struct {
	Allow       []string `json:"allow"`
	UnixSockets bool     `json:"unix_sockets"`
}

// PeerIn is the work folder's top-level folder the runtime fetches peer
// files into.
const PeerIn = "peer-in"

// Devices every tier grants. Never /dev/tty: a command runs in a session
// of its own with no controlling terminal (the operator's terminal is not
// its to type into).
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// NewPlan builds the plan for in.Class. A workdir_exec grant caps the class
// at advisory (the caller warns W-SEC-011 and refuses a higher floor).
func NewPlan(in Input) (*Plan, error) {
	class := in.Class
	if Rank(class) < 0 {
		return nil, fmt.Errorf("containment class %q: want advisory, scoped or sealed", class)
	}
	if in.WorkdirExec {
		class = Advisory
	}
	p := &Plan{Class: class, Seccomp: SeccompPlan{Allow: allowList(), UnixSockets: in.UnixSockets},
		NetNS: in.Egress != nil, egress: in.Egress}
	if class != Advisory {
		// A tier that withholds exec of files the command wrote also
		// withholds the file it can write without a path (a memfd).
		p.Seccomp.Allow = withoutMemfd(p.Seccomp.Allow)
	}
	switch class {
	case Sealed:
		p.Mechanism, p.Namespaces, p.Landlock = MechSealed, true, true
	case Scoped:
		p.Mechanism, p.Landlock = MechScoped, true
	default:
		p.Mechanism = mechAdvisory
	}
	clean := func(key, s string, required bool) (string, error) {
		if s == "" {
			if required {
				return "", fmt.Errorf("containment plan: %s is empty", key)
			}
			return "", nil
		}
		if !filepath.IsAbs(s) {
			return "", fmt.Errorf("containment plan: %s %q is not an absolute path", key, s)
		}
		r, err := filepath.EvalSymlinks(s)
		if err != nil {
			return "", fmt.Errorf("containment plan: %s: %w", key, err)
		}
		return r, nil
	}
	var err error
	if p.WorkFolder, err = clean("work folder", in.WorkFolder, true); err != nil {
		return nil, err
	}
	within, err := clean("work folder", in.Within, false)
	if err != nil {
		return nil, err
	}
	if root := within; root != "" {
		if !under(p.WorkFolder, root) {
			return nil, fmt.Errorf("containment plan: filesystem.scope %s resolves to %s, outside the work folder %s", in.WorkFolder, p.WorkFolder, root)
		}
	}
	home, err := clean("HOME", in.Home, false)
	if err != nil {
		return nil, err
	}
	rt, err := clean("runtime dir", in.RuntimeDir, false)
	if err != nil {
		return nil, err
	}
	rec, err := clean("records dir", in.RecordsDir, false)
	if err != nil {
		return nil, err
	}
	for _, d := range SystemDirs {
		p.Paths = append(p.Paths, Path{Path: d, Exec: true, Dir: true})
	}
	p.Paths = append(p.Paths, expandEtc()...)
	for _, t := range in.Tools {
		r, err := clean("tool", t, true)
		if err != nil {
			return nil, err
		}
		// A binary the capsule can write is code it chose: running it is
		// what workdir_exec grants, not shell.allow.
		for _, wd := range []string{p.WorkFolder, home, within} {
			if wd != "" && under(r, wd) && !in.WorkdirExec {
				return nil, fmt.Errorf("containment plan: the shell.allow binary %s lives under %s, which the capsule can write: running it needs filesystem.workdir_exec", t, wd)
			}
		}
		p.Paths = append(p.Paths, Path{Path: r, Exec: true})
	}
	for _, d := range in.InstallDirs {
		r, err := clean("install dir", d, true)
		if err != nil {
			return nil, err
		}
		for _, wd := range []string{p.WorkFolder, home, within} {
			if wd != "" && (under(r, wd) || under(wd, r)) {
				return nil, fmt.Errorf("containment plan: the install dir %s overlaps %s, which the capsule can write", d, wd)
			}
		}
		p.Paths = append(p.Paths, Path{Path: r, Exec: true, Dir: true})
	}
	if rec != "" {
		p.Paths = append(p.Paths, Path{Path: rec, Dir: true})
	}
	if rt != "" {
		p.Paths = append(p.Paths, Path{Path: rt, Dir: true})
	}
	p.Paths = append(p.Paths, Path{Path: p.WorkFolder, Write: true, Exec: in.WorkdirExec, Dir: true})
	// peer-in/ sits at the top of the work folder (even under a
	// filesystem.scope); a sealed root that shows it shows it read-only.
	// Landlock gets no rule for it: its rules only add access, and a
	// rule on a path the capsule can replace with a link would follow it.
	if p.Namespaces {
		top := within
		if top == "" {
			top = p.WorkFolder
		}
		if peerIn := filepath.Join(top, PeerIn); under(peerIn, p.WorkFolder) {
			p.ReadOnly = append(p.ReadOnly, peerIn)
		}
	}
	if home != "" {
		p.Paths = append(p.Paths, Path{Path: home, Write: true, Dir: true})
		p.Env = append(p.Env, "HOME="+home)
	}
	// Parents first, so a sealed root binds the records dir before the
	// HOME inside it.
	sort.SliceStable(p.Paths, func(i, j int) bool {
		return strings.Count(p.Paths[i].Path, "/") < strings.Count(p.Paths[j].Path, "/")
	})
	p.Devices = Devices
	if p.SeccompBPF, err = compileSeccomp(p.Seccomp); err != nil {
		return nil, err
	}
	res := in.Resources.withDefaults()
	p.Rlimits = rlimits(res)
	p.Cgroup = CgroupPlan{MemoryBytes: res.CgroupMemoryBytes, PidsMax: res.CgroupPidsMax}
	return p, nil
}

// withoutMemfd is the allow-list of a tier that withholds exec of files the
// command wrote (sealed, scoped): memfd_create is refused there, since a
// memfd is such a file that no path rule or noexec mount covers — run by
// execveat(AT_EMPTY_PATH), /proc/self/fd/N or ld.so.
func withoutMemfd(list []string) []string {
	out := make([]string, 0, len(list))
	for _, n := range list {
		if n != "memfd_create" {
			out = append(out, n)
		}
	}
	return out
}

// under reports whether p is dir or inside it (both clean and resolved).
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// expandEtc resolves SystemEtc against the host's /etc.
func expandEtc() []Path {
	var out []Path
	for _, e := range SystemEtc {
		dir := strings.HasSuffix(e, "/")
		name := strings.TrimSuffix(e, "/")
		matches, _ := filepath.Glob(filepath.Join("/etc", name))
		for _, m := range matches {
			p := Path{Path: m, Dir: dir}
			if !dir && isDir(m) {
				p.Dir = true
			}
			switch filepath.Base(m) {
			case "passwd":
				p.Synthetic = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
			case "group":
				p.Synthetic = "root:x:0:\nnogroup:x:65534:\n"
			}
			out = append(out, p)
		}
	}
	return out
}
