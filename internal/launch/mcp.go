package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/contain/egress"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/mcp"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/version"
)

// mcpServers are an agent session's MCP servers (docs/mcp.md): each stdio
// server with an egress proxy of its own, enforcing its entry's
// network.allow.
type mcpServers struct {
	servers []*mcp.Server
	proxies []*egress.Proxy
	stopped sync.Once
}

// hasStdioMCP reports whether the capsule declares a stdio MCP server: a
// native program it runs, like a shell.allow binary.
func hasStdioMCP(m *manifest.Manifest) bool {
	return m.IsAgent() && len(m.MCPCommands()) > 0
}

// startMCP starts every declared server at once, after session_start and
// before the inventory: the model's tool list is complete before the first
// task. The first failure in manifest order fails the launch, once every
// start has ended; the servers that did start are stopped.
func startMCP(ctx context.Context, r *run) (*mcpServers, error) {
	p, sess := r.p, r.sess
	entries := p.Manifest.MCPEntries()
	ms := &mcpServers{}
	if len(entries) == 0 || !p.Manifest.IsAgent() {
		return ms, nil
	}
	identity := []string{"MURMUR_SESSION_ID=" + sess.ID, "MURMUR_CAPSULE_NAME=" + sess.Name, "MURMUR_CAPSULE_VERSION=" + sess.Version}
	if sess.CapsuleURL != "" {
		identity = append(identity, "MURMUR_CAPSULE_URL="+sess.CapsuleURL)
	} else if r.url != "" {
		identity = append(identity, "MURMUR_CAPSULE_URL="+r.url)
	}
	for _, a := range entries {
		g := tools.GrantOf(p.Grants, a).Grants
		work, err := scopeFolder(sess, g.FilesystemScope)
		if err != nil {
			ms.stop()
			return nil, err
		}
		cfg := mcp.Config{Entry: a, Grant: g, ClientVersion: version.Version, RecordsDir: sess.RecordsDir,
			Workdir: work, Lookup: p.lookup, Identity: identity, Lines: r.rec,
			Deadline: time.Duration(g.Limits.DeadlineSeconds) * time.Second, Log: r.opts.Log,
			Warn: func(w diag.Warning) { fmt.Fprintln(r.opts.Stderr, w.String()) }}
		if a.MCP.Command != "" && p.Containment.Native {
			px, err := egress.Start(g.NetworkAllow)
			if err != nil {
				ms.stop()
				return nil, err
			}
			if r.egress != nil {
				px.SetLogger(r.egress.logger)
			}
			ms.proxies = append(ms.proxies, px)
			cfg.ProxyEnv = egress.Env()
			tier, err := p.mcpTier(a)
			if err != nil {
				ms.stop()
				return nil, err
			}
			mech := p.Containment.Mechanism
			if tier != p.Containment.Achieved {
				mech = contain.MechScoped
				if tier == contain.Sealed {
					mech = contain.MechSealed
				}
			}
			cfg.Containment = &trace.MCPContainment{Achieved: tier, Mechanism: mech}
			cfg.WrapFor = p.mcpWrap(sess, a, g, work, px, tier)
		}
		ms.servers = append(ms.servers, mcp.New(cfg))
	}
	errs := make([]error, len(ms.servers))
	var wg sync.WaitGroup
	for i, s := range ms.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Start(ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			ms.stop()
			return nil, err
		}
	}
	return ms, nil
}

// entries are the offered tools of every server, in manifest order.
func (ms *mcpServers) entries() []tools.Entry {
	if ms == nil {
		return nil
	}
	return tools.MCPEntries(ms.servers)
}

// stop ends every server at once (stdin, SIGTERM, SIGKILL), then their
// proxies; once.
func (ms *mcpServers) stop() {
	if ms == nil {
		return
	}
	ms.stopped.Do(func() {
		var wg sync.WaitGroup
		for _, s := range ms.servers {
			wg.Add(1)
			go func() { defer wg.Done(); s.Stop() }()
		}
		wg.Wait()
		for _, px := range ms.proxies {
			px.Close()
		}
	})
}

// scopeFolder is the work folder, or the filesystem scope inside it (made
// when missing).
func scopeFolder(sess *session.Session, scope *string) (string, error) {
	work := sess.Workdir
	if scope != nil {
		if clean, err := manifest.CleanScope(*scope); err == nil && clean != "." {
			work = filepath.Join(sess.Workdir, filepath.FromSlash(clean))
			if err := os.MkdirAll(work, 0o700); err != nil {
				return "", diag.Wrap(err, "E-RUN-065", "the filesystem scope %s cannot be made", work)
			}
		}
	}
	return work, nil
}

// mcpWrap is a stdio server's containment: a shell command's plan at the
// achieved tier, without the session's own folders (no runtime dir, no
// records dir), with its own HOME, its installation read and execute, and
// its own network namespace behind px.
func (p *Plan) mcpWrap(sess *session.Session, a manifest.Artifact, g manifest.GrantSet, work string, px *egress.Proxy, tier string) func(string) (func(*exec.Cmd) error, error) {
	return func(bin string) (func(*exec.Cmd) error, error) {
		c := p.Containment
		home := filepath.Join(sess.RecordsDir, "mcp", manifest.Bare(a.Name), "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			return nil, err
		}
		for _, d := range a.MCP.InstallDirs {
			if r, err := filepath.EvalSymlinks(d); err == nil && under(r, sess.Workdir) || under(d, sess.Workdir) {
				return nil, diag.New("E-MAN-045", "mcp.install_dirs of %s: %s lies inside the work folder", a.Name, d)
			}
		}
		var bins []string
		if !inSystemDir(bin) && !underAny(bin, a.MCP.InstallDirs) {
			bins = append(bins, bin)
		}
		in := contain.Input{Class: tier, WorkFolder: work, Within: sess.Workdir, Home: home,
			Tools: bins, InstallDirs: a.MCP.InstallDirs, WorkdirExec: g.WorkdirExec, UnixSockets: g.UnixSockets,
			Resources: c.Resources, Egress: px}
		plan, err := contain.NewPlan(in)
		if err != nil {
			return nil, err
		}
		return contain.Wrap(plan), nil
	}
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func underAny(p string, dirs []string) bool {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		r = p
	}
	for _, d := range dirs {
		if rd, err := filepath.EvalSymlinks(d); err == nil && under(r, rd) || under(p, d) {
			return true
		}
	}
	return false
}
