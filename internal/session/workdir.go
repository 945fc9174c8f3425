package session

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
)

// systemDirs may neither be a work folder nor hold one.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/boot", "/dev", "/proc", "/sys"}

// topDirs may not be a work folder themselves (a folder inside them may).
var topDirs = []string{"/", "/var", "/opt", "/home", "/root", "/srv", "/mnt", "/media", "/run", "/tmp"}

// CheckWorkdir refuses a work folder that would hand the capsule the
// runtime's own state or the host's (issue: the work folder is a trust
// boundary): /, a system directory or one inside it, a top-level directory,
// $HOME itself, any folder that is or holds ~/.murmur (stores, compile cache
// and its key, records, sessions, running records), one inside ~/.murmur,
// or — for a project run — the project directory or one of its parents (it
// holds the project's .murmur store). Symlinks are resolved as far as the
// path exists, so a link cannot smuggle one of these in. E-RUN-056.
func CheckWorkdir(workdir, homeDir string, project bool, projectDir string) error {
	w := resolve(workdir)
	refuse := func(why string) error {
		return diag.New("E-RUN-056", "the work folder %s %s: a capsule may read and write all of its work folder", workdir, why).
			WithHint("give --workdir a folder of its own (a new directory), or leave it out: the default is <manifest dir>/workdir/<session id>")
	}
	for _, d := range topDirs {
		if w == d {
			return refuse("is " + d)
		}
	}
	for _, d := range systemDirs {
		if w == d || within(w, d) {
			return refuse("is the system directory " + d + " or inside it")
		}
	}
	h := resolve(homeDir)
	if w == h {
		return refuse("is your home directory")
	}
	m := resolve(home.Murmur(homeDir))
	if w == m || within(m, w) {
		return refuse("holds " + home.Murmur(homeDir) + ", the runtime's own state")
	}
	if within(w, m) {
		return refuse("is inside " + home.Murmur(homeDir) + ", the runtime's own state")
	}
	if project {
		pm := resolve(home.Project(projectDir))
		if within(pm, w) {
			return refuse("holds the project's store " + home.Project(projectDir))
		}
	}
	return nil
}

// CheckRuntimeBinaries refuses a work folder that is or holds the directory
// of one of the runtime's own executables (bins, symlinks resolved, each
// as given and as resolved): a command may write anywhere in its work
// folder (and so in any filesystem.scope inside it), and could replace
// mur-contain, mur-driver or mur itself there — the next command's helper,
// the provider key's holder, the delegated child. E-RUN-056.
func CheckRuntimeBinaries(workdir string, bins []string) error {
	w := resolve(workdir)
	for _, b := range bins {
		if b == "" {
			continue
		}
		for _, dir := range []string{resolve(filepath.Dir(b)), filepath.Dir(resolve(b))} {
			if dir == w || within(dir, w) {
				return diag.New("E-RUN-056", "the work folder %s holds %s, the directory of the runtime's own binary %s: a command could replace the runtime's helpers there (mur-contain, mur-driver) or mur itself", workdir, dir, b).
					WithHint("give --workdir a folder that does not hold mur's installation directory, or install mur outside the folder (scripts/install.sh PREFIX)")
			}
		}
	}
	return nil
}

// within reports whether p is strictly inside dir.
func within(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// resolve is the cleaned absolute path with symlinks resolved for the part
// of it that exists.
func resolve(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if _, err := os.Lstat(cur); err == nil {
			return p // exists but cannot be resolved: judge the path as written
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// IsChildDir reports whether dir is a delegated child's work folder: a
// directory directly inside a children/ folder of a records dir.
func IsChildDir(dir, homeDir string) bool {
	w := resolve(dir)
	return within(w, resolve(home.Records(homeDir))) && filepath.Base(filepath.Dir(w)) == "children"
}
