package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/contain/egress"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
)

// commandWrap is the containment every shell command of the session runs
// under: the plan of the achieved tier over this session's folders, applied
// by the re-exec helper (contain.Command). nil when the capsule has no
// native commands.
func (p *Plan) commandWrap(sess *session.Session, px *egress.Proxy) (func(*exec.Cmd) error, error) {
	c := p.Containment
	if !c.Native {
		return nil, nil
	}
	g := p.Grants.Capsule
	work := sess.Workdir
	if g.FilesystemScope != nil {
		if clean, err := manifest.CleanScope(*g.FilesystemScope); err == nil && clean != "." {
			work = filepath.Join(sess.Workdir, filepath.FromSlash(clean))
			if err := os.MkdirAll(work, 0o700); err != nil {
				return nil, diag.Wrap(err, "E-RUN-065", "the filesystem scope %s cannot be made", work)
			}
		}
	}
	homeDir := sessionHome(sess)
	if err := os.MkdirAll(homeDir, 0o700); err != nil {
		return nil, diag.Wrap(err, "E-RUN-077", "the session's HOME %s cannot be made", homeDir)
	}
	var bins []string
	path, _ := p.lookup("PATH")
	for _, b := range g.ShellAllow {
		for _, dir := range filepath.SplitList(path) {
			if fp := filepath.Join(dir, b); isExecutable(fp) {
				if !inSystemDir(fp) { // the system dirs are in every tier's view already
					bins = append(bins, fp)
				}
				break
			}
		}
	}
	in := contain.Input{Class: c.Achieved, WorkFolder: work, Within: sess.Workdir, Home: homeDir,
		RuntimeDir: sess.RuntimeDir, RecordsDir: sess.RecordsDir, Tools: bins,
		WorkdirExec: g.WorkdirExec, UnixSockets: g.UnixSockets, Resources: c.Resources}
	if px != nil {
		in.Egress = px
	}
	plan, err := contain.NewPlan(in)
	if err != nil {
		return nil, diag.Wrap(err, "E-CAP-003", "the %s containment plan cannot be made for %s", c.Achieved, p.Manifest.Name)
	}
	return contain.Wrap(plan), nil
}

// sessionHome is the HOME a session's commands get: <records dir>/home.
func sessionHome(sess *session.Session) string { return filepath.Join(sess.RecordsDir, "home") }

func inSystemDir(p string) bool {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	for _, d := range contain.SystemDirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// needNetNS refuses, with E-CAP-005, a capsule that declares spawn.allow
// or shell.allow on a host that refuses it a network namespace (the spec's
// "needs a network namespace of its own"). The child mur a delegation
// starts is outside the namespace (docs/containment.md: it reaches mur-roost), so
// the requirement is the refusal: there is no fallback to the host's
// network for whatever the capsule runs.
func (p *Plan) needNetNS() error {
	g := p.Grants.Capsule
	if len(g.SpawnAllow) == 0 && len(g.ShellAllow) == 0 && !hasStdioMCP(p.Manifest) {
		return nil
	}
	return egress.NeedNetNS()
}
