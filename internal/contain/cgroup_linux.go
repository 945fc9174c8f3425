package contain

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupHost is where this process may make a command's cgroups: the plane
// that caps memory and processes, and a cgroup v2 directory whose children
// can be killed whole (cgroup.kill) even where v2 holds no controllers.
type cgroupHost struct {
	plane   string
	blocker string // why no cgroup plane holds, for --explain-scope
	// v2 is a v2 cgroup this process may make children in ("" none);
	// v2Limits: its children get memory.max and pids.max.
	v2       string
	v2Limits bool
	// memV1, pidsV1 are this process's own v1 memory and pids cgroups
	// (PlaneV1 only).
	memV1, pidsV1 string
}

var (
	cgOnce sync.Once
	cgHost *cgroupHost
	cgSeq  atomic.Uint64
)

func cgroups() *cgroupHost {
	cgOnce.Do(func() {
		cgHost = probeCgroups()
		// A runtime killed outright (kill -9) never removed its commands'
		// cgroups: the first runtime after it does.
		cgHost.sweep()
	})
	return cgHost
}

// SweepStaleCgroups removes the command cgroups (murmur-<pid>-<n>) that
// runtimes no longer running left under this process's own cgroups —
// killing anything still in them first — and returns how many it removed.
// A runtime sweeps once when it first needs cgroups; mur ps sweeps too.
func SweepStaleCgroups() int {
	cgOnce.Do(func() { cgHost = probeCgroups() })
	return cgHost.sweep()
}

var sweepMu sync.Mutex

func (h *cgroupHost) sweep() int {
	sweepMu.Lock()
	defer sweepMu.Unlock()
	sets := map[string]*cgroupSet{}
	for _, base := range []string{h.v2, h.memV1, h.pidsV1} {
		if base == "" {
			continue
		}
		ents, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range ents {
			pid, ok := cgroupOwner(e.Name())
			if !e.IsDir() || !ok {
				continue
			}
			d := filepath.Join(base, e.Name())
			if runtimeAlive(pid, d) {
				continue
			}
			s := sets[e.Name()]
			if s == nil {
				s = &cgroupSet{}
				sets[e.Name()] = s
			}
			s.dirs = append(s.dirs, d)
			switch base {
			case h.v2:
				s.v2, s.pids = d, d
			case h.pidsV1:
				if s.pids == "" {
					s.pids = d
				}
			}
		}
	}
	for _, s := range sets {
		s.release()
	}
	return len(sets)
}

// cgroupOwner is the runtime pid a command cgroup's name carries
// (murmur-<pid>-<n>).
func cgroupOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "murmur-")
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if _, err2 := strconv.ParseUint(n, 10, 64); err != nil || err2 != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// runtimeAlive reports whether the process pid that made the cgroup dir is
// still running: a process of that pid exists and started no later than
// the cgroup was made (a later one got the dead runtime's pid again).
func runtimeAlive(pid int, dir string) bool {
	if pid == os.Getpid() {
		return true
	}
	if errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		return false
	}
	start, ok := processStart(pid)
	if !ok {
		return true // there, but its start unreadable: leave it be
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return true // gone already, or unreadable: not this sweep's to touch
	}
	made := time.Unix(st.Ctim.Unix())
	// btime has a one-second grain.
	return !start.After(made.Add(2 * time.Second))
}

// processStart is when pid started, from /proc/<pid>/stat (clock ticks
// after boot) and /proc/stat's btime.
func processStart(pid int) (time.Time, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, false
	}
	// The command name (field 2) may hold spaces: count after its ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return time.Time{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64) // field 22, starttime
	if err != nil {
		return time.Time{}, false
	}
	bt, ok := bootTime()
	if !ok {
		return time.Time{}, false
	}
	const clkTck = 100 // USER_HZ, fixed by the kernel's ABI
	return bt.Add(time.Duration(ticks) * time.Second / clkTck), true
}

func bootTime() (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(n, 0), err == nil
		}
	}
	return time.Time{}, false
}

// cgroupMounts reads /proc/self/mountinfo: cgroup2's mount point, and each v1
// controller's.
func cgroupMounts() (v2 string, v1 map[string]string) {
	v1 = map[string]string{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", v1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		switch rf[0] {
		case "cgroup2":
			if v2 == "" {
				v2 = lf[4]
			}
		case "cgroup":
			for _, o := range strings.Split(rf[2], ",") {
				if o == "memory" || o == "pids" {
					v1[o] = lf[4]
				}
			}
		}
	}
	return v2, v1
}

// ownCgroups reads /proc/self/cgroup: "" for v2's path, else the controller.
func ownCgroups() map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return out
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// tryChild really makes (and removes) a child cgroup under dir: the probe
// is the operation itself, never a version or a file mode.
func tryChild(dir string) error {
	if dir == "" {
		return errors.New("not mounted")
	}
	d := filepath.Join(dir, fmt.Sprintf("murmur-probe-%d", os.Getpid()))
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Remove(d)
}

func hasWords(file string, words ...string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	have := strings.Fields(string(b))
	for _, w := range words {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func probeCgroups() *cgroupHost {
	h := &cgroupHost{plane: PlaneRlimits}
	v2m, v1m := cgroupMounts()
	own := ownCgroups()
	var why []string
	if v2m != "" {
		d := filepath.Join(v2m, own[""])
		if err := tryChild(d); err != nil {
			why = append(why, "cgroup v2: "+err.Error())
		} else {
			h.v2 = d
			// Delegated: the controllers are enabled for this cgroup's
			// children already (a systemd scope with Delegate=yes, or a
			// supervisor that set it up). Enabling them here would move
			// controllers under the host's own supervisor.
			if hasWords(filepath.Join(d, "cgroup.subtree_control"), "memory", "pids") {
				h.v2Limits, h.plane = true, PlaneV2
				return h
			}
			why = append(why, "cgroup v2: no memory and pids controllers delegated to "+d)
		}
	} else {
		why = append(why, "cgroup v2: not mounted")
	}
	mem, pids := v1m["memory"], v1m["pids"]
	if mem == "" || pids == "" {
		why = append(why, "cgroup v1: no memory and pids hierarchies")
	} else {
		md, pd := filepath.Join(mem, own["memory"]), filepath.Join(pids, own["pids"])
		err := tryChild(md)
		if err == nil {
			err = tryChild(pd)
		}
		if err == nil {
			h.plane, h.memV1, h.pidsV1 = PlaneV1, md, pd
			return h
		}
		why = append(why, "cgroup v1: "+err.Error())
	}
	h.blocker = strings.Join(why, "; ")
	return h
}

// cgroupSet is one command's cgroups: made before it starts, the helper
// enrols in them first thing, killed whole and removed once it has ended.
type cgroupSet struct {
	dirs []string // every directory, the one kill can use first
	v2   string
	pids string // where to find the processes to kill without cgroup.kill
}

func writeFile(p, v string) error {
	return os.WriteFile(p, []byte(v), 0)
}

// newCgroups makes the cgroups for one command under plan p; nil when no
// cgroup is to be had (the rlimits alone hold).
func newCgroups(p *Plan) (*cgroupSet, error) {
	h := cgroups()
	name := fmt.Sprintf("murmur-%d-%d", os.Getpid(), cgSeq.Add(1))
	s := &cgroupSet{}
	mk := func(base string) (string, error) {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", fmt.Errorf("cgroup %s: %w", d, err)
		}
		s.dirs = append(s.dirs, d)
		return d, nil
	}
	fail := func(err error) (*cgroupSet, error) {
		s.remove()
		return nil, err
	}
	lim := func(d, file string, v uint64) error {
		if err := writeFile(filepath.Join(d, file), strconv.FormatUint(v, 10)); err != nil {
			return fmt.Errorf("cgroup limit %s: %w", file, err)
		}
		return nil
	}
	if h.v2 != "" {
		d, err := mk(h.v2)
		if err != nil {
			return fail(err)
		}
		s.v2, s.pids = d, d
		if h.v2Limits {
			if err := lim(d, "memory.max", p.Cgroup.MemoryBytes); err != nil {
				return fail(err)
			}
			if err := lim(d, "pids.max", p.Cgroup.PidsMax); err != nil {
				return fail(err)
			}
		}
	}
	if h.plane == PlaneV1 {
		md, err := mk(h.memV1)
		if err != nil {
			return fail(err)
		}
		if err := lim(md, "memory.limit_in_bytes", p.Cgroup.MemoryBytes); err != nil {
			return fail(err)
		}
		pd, err := mk(h.pidsV1)
		if err != nil {
			return fail(err)
		}
		if err := lim(pd, "pids.max", p.Cgroup.PidsMax); err != nil {
			return fail(err)
		}
		if s.pids == "" {
			s.pids = pd
		}
	}
	if len(s.dirs) == 0 {
		return nil, nil
	}
	return s, nil
}

// enrol moves the calling process into every directory: run by the helper
// before anything else, so the command is counted from its first
// instruction.
func enrol(dirs []string) error {
	for _, d := range dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), "0"); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", d, err)
		}
	}
	return nil
}

// release ends whatever the command left in its cgroups — descendants that
// left its process group or closed their descriptors included — and
// removes them.
func (s *cgroupSet) release() {
	if s == nil {
		return
	}
	if s.v2 != "" && writeFile(filepath.Join(s.v2, "cgroup.kill"), "1") == nil {
		waitEmpty(s.v2)
	} else if s.pids != "" {
		// No cgroup.kill: kill what is listed until nothing is; pids.max
		// bounds how many a fork race can add.
		for i := 0; i < 100 && killListed(s.pids) > 0; i++ {
			time.Sleep(time.Millisecond)
		}
		waitEmpty(s.pids)
	}
	s.remove()
}

func killListed(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return 0
	}
	n := 0
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = unix.Kill(pid, unix.SIGKILL)
			n++
		}
	}
	return n
}

// waitEmpty waits (boundedly) until no process is left in dir: a killed
// process leaves its cgroup only once the kernel has torn it down.
func waitEmpty(dir string) {
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *cgroupSet) remove() {
	for i := len(s.dirs) - 1; i >= 0; i-- {
		d := s.dirs[i]
		for try := 0; try < 100; try++ {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, unix.EBUSY) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// ResourcePlane says which plane caps a command's memory and processes on
// this host (PlaneV2, PlaneV1 or PlaneRlimits) and, for rlimits, why no
// cgroup plane holds.
func ResourcePlane() (plane, blocker string) {
	h := cgroups()
	return h.plane, h.blocker
}
