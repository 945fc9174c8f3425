package hostapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/sandbox"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// ToolRunCall names the call a tool's deadline stops, in call_deadline lines.
const ToolRunCall = wit.IfaceToolRun + "#run"

// tool is one declared tool artifact: resolved and compiled on its first
// invoke, then reused by every later invoke of the session (each in a fresh
// instance).
type tool struct {
	decl  manifest.Artifact
	grant manifest.ArtifactGrant

	once sync.Once
	comp *wasmhost.Component
	file string // the component's entry in the .mur.zip
	err  error
}

func (t *tool) close() {
	if t.comp != nil {
		t.comp.Close()
	}
}

// Invoke implements murmur:tool-registry/invoke: it runs the declared tool
// artifact name (full or bare name, contracts §9) in a fresh instance bounded
// by the tool's own narrowed limits, and records one tool_call line. An
// undeclared name, a tool that cannot be loaded and a tool that traps, runs
// past its deadline or hits a resource limit all answer err with the reason:
// the capsule goes on.
func (s *Session) Invoke(ctx context.Context, name string, in wit.ToolInput) (wit.ToolResult, error) {
	start := time.Now()
	t, err := s.lookupTool(name)
	label := clip(name)
	var res wit.ToolResult
	if err == nil {
		label = t.decl.Name
		res, err = s.run(ctx, t, in)
		s.inflight.Done()
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	s.recorder().ToolCall(label, start, inputBytes(in), outputBytes(res, err), errText)
	return res, err
}

// inputBytes and outputBytes measure the payload of a call: the data
// strings (what a tool consumes and produces), not the fixed record fields.
func inputBytes(in wit.ToolInput) int {
	if in.Data == nil {
		return 0
	}
	return len(*in.Data)
}

func outputBytes(r wit.ToolResult, err error) int {
	if err != nil || r.Data == nil {
		return 0
	}
	return len(*r.Data)
}

// lookupTool finds a declared runtime: tool artifact by full name, else by
// bare name; a bare name two declared tools share is refused as ambiguous
// rather than guessed. A tool it returns counts as in flight until the
// caller calls s.inflight.Done.
func (s *Session) lookupTool(name string) (*tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("hostapi: the session is over")
	}
	t, err := s.findTool(name)
	if err == nil {
		s.inflight.Add(1)
	}
	return t, err
}

// findTool is lookupTool's search; s.mu is held.
func (s *Session) findTool(name string) (*tool, error) {
	if t := s.tools[name]; t != nil {
		return t, nil
	}
	m := s.cfg.Manifest
	var found []int
	for i, a := range m.Artifacts {
		if a.RuntimeKind() == manifest.RuntimeTool && a.Name == name {
			found = []int{i}
			break
		}
	}
	if len(found) == 0 && !strings.Contains(name, "/") {
		for i, a := range m.Artifacts {
			if a.RuntimeKind() == manifest.RuntimeTool && manifest.Bare(a.Name) == name {
				found = append(found, i)
			}
		}
	}
	switch len(found) {
	case 0:
		if name == "delegate-task" && len(s.grants.Capsule.SpawnAllow) > 0 {
			return nil, diag.New("E-RUN-062", "tool \"delegate-task\" is not available in this build: delegation from a script capsule is not implemented yet, although %s grants capabilities.spawn.allow", m.Name).
				WithHint("start the sub-capsule yourself with 'mur run --capsule'")
		}
		return nil, diag.New("E-RUN-062", "tool %q is not declared: the tools %s declares under artifacts: are %s", clip(name), m.Name, strings.Join(s.declaredTools(), ", ")).
			WithHint("declare it under artifacts: (runtime: tool) in murmur.yaml, or invoke a declared tool by its full or bare name")
	case 1:
	default:
		var names []string
		for _, i := range found {
			names = append(names, m.Artifacts[i].Name)
		}
		return nil, diag.New("E-RUN-062", "tool %q is ambiguous: %s all declare it", clip(name), strings.Join(names, ", ")).
			WithHint("invoke it by its full name")
	}
	a := m.Artifacts[found[0]]
	if t := s.tools[a.Name]; t != nil {
		s.tools[name] = t
		return t, nil
	}
	t := &tool{decl: a}
	for _, g := range s.grants.Artifacts {
		if g.Name == a.Name && g.Version == a.Version {
			t.grant = g
			break
		}
	}
	if t.grant.Name == "" {
		// Grants passed in without this artifact: it gets the capsule's.
		t.grant = manifest.ArtifactGrant{Name: a.Name, Version: a.Version, Runtime: manifest.RuntimeTool, Grants: s.grants.Capsule}
	}
	s.tools[a.Name] = t
	s.tools[name] = t
	return t, nil
}

func (s *Session) declaredTools() []string {
	var out []string
	for _, a := range s.cfg.Manifest.Artifacts {
		if a.RuntimeKind() == manifest.RuntimeTool {
			out = append(out, a.Name)
		}
	}
	if len(out) == 0 {
		return []string{"(none declared)"}
	}
	return out
}

// load resolves the tool from the stores (lock-checked like the launch was)
// and compiles its component, once per session.
func (s *Session) load(t *tool) error {
	t.once.Do(func() {
		ref := t.decl.Name + "@" + t.decl.Version
		r, err := s.cfg.Stores.Resolve(t.decl.Name, t.decl.Version, manifest.Options{SkipSecrets: true})
		if err != nil {
			t.err = diag.Wrap(err, "E-RUN-063", "tool %s cannot be loaded", ref).
				WithHint("run 'mur install' in the project")
			return
		}
		if r.Runtime != manifest.RuntimeTool {
			t.err = diag.New("E-RUN-063", "tool %s cannot be loaded: the installed artifact is a %s, not a tool", ref, r.Runtime).
				WithHint("declare it with its own runtime, or install the tool artifact of that name")
			return
		}
		file, data, ok := r.Archive.Payload()
		if !ok || !strings.HasSuffix(file, ".wasm") {
			t.err = diag.New("E-RUN-063", "tool %s cannot be loaded: its .mur.zip holds no root .wasm component", ref).
				WithHint("rebuild it with 'mur build' from a directory holding the tool's component")
			return
		}
		comp, err := s.cfg.Engine.Compile(data)
		if err != nil {
			t.err = diag.Wrap(err, "E-RUN-063", "tool %s cannot be loaded", ref).
				WithHint("rebuild it as a component exporting %s", wit.IfaceToolRun)
			return
		}
		if !wit.ExportsToolRun(comp) {
			comp.Close()
			t.err = diag.New("E-RUN-063", "tool %s cannot be loaded: %s does not export %s with a run function", ref, file, wit.IfaceToolRun).
				WithHint("build it against the tool world (murmur:runtime-guest/tool)")
			return
		}
		t.comp, t.file = comp, file
	})
	return t.err
}

// run instantiates the tool in a fresh store and calls its run once.
func (s *Session) run(ctx context.Context, t *tool, in wit.ToolInput) (wit.ToolResult, error) {
	if err := s.load(t); err != nil {
		return wit.ToolResult{}, err
	}
	rc, err := s.runConfig(t)
	if err != nil {
		return wit.ToolResult{}, err
	}
	inst, err := s.cfg.Engine.Instantiate(ctx, t.comp, rc)
	if err != nil {
		return wit.ToolResult{}, s.toolEnding(t, rc.Limits, err)
	}
	defer inst.Close()
	res, err := wit.CallToolRun(ctx, inst, in)
	if err != nil {
		return wit.ToolResult{}, s.toolEnding(t, rc.Limits, err)
	}
	return res, nil
}

// runConfig is the tool's sandbox: its narrowed limits, an environment of
// its env.allow names plus the identity, and a filesystem of its scope of
// the work folder (read-write) and the runtime dir (read-only).
func (s *Session) runConfig(t *tool) (wasmhost.RunConfig, error) {
	g := t.grant.Grants
	sess := s.cfg.Session
	env := sandbox.Env(sess, g.EnvAllow, s.lookup)
	dir, err := scopeDir(sess.Workdir, g.FilesystemScope)
	if err != nil {
		return wasmhost.RunConfig{}, diag.Wrap(err, "E-RUN-065", "tool %s: its filesystem scope cannot be opened", t.decl.Name).
			WithHint("capabilities.filesystem.scope must name a folder inside the work folder (not a symlink leading out of it)")
	}
	wasi := wasmhost.WASI{
		Args:     []string{manifest.Bare(t.decl.Name)},
		Env:      env,
		Preopens: sandbox.Preopens(dir, sess.RuntimeDir),
	}
	// The tool's stdout and stderr go to logs/tools/<scope>/<name>.std{out,err}.log
	// in the records dir; each invoke starts them afresh, so they hold the
	// last call's output. Without a records dir they are discarded.
	if logs := filepath.Join(sess.RecordsDir, "logs"); sess.RecordsDir != "" && isDir(logs) {
		scope, bare, _ := strings.Cut(t.decl.Name, "/")
		dir := filepath.Join(logs, "tools", scope)
		if err := os.MkdirAll(dir, 0o700); err == nil {
			wasi.StdoutPath = filepath.Join(dir, bare+".stdout.log")
			wasi.StderrPath = filepath.Join(dir, bare+".stderr.log")
		} else {
			s.log.Warn("tool logs are discarded", "tool", t.decl.Name, "error", err)
		}
	}
	return wasmhost.RunConfig{Limits: sandbox.Limits(g.Limits), WASI: wasi, Host: s.toolHost}, nil
}

// scopeDir is the folder a tool sees as its work folder: the whole work
// folder, or its filesystem.scope inside it (created when missing). A scope
// that resolves outside the work folder through a symlink is refused.
func scopeDir(workdir string, scope *string) (string, error) {
	if scope == nil {
		return workdir, nil
	}
	clean, err := manifest.CleanScope(*scope)
	if err != nil {
		return "", err
	}
	if clean == "." {
		return workdir, nil
	}
	dir := filepath.Join(workdir, filepath.FromSlash(clean))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	realWork, err := filepath.EvalSymlinks(workdir)
	if err != nil {
		return "", err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if realDir != realWork && !strings.HasPrefix(realDir, realWork+string(filepath.Separator)) {
		return "", fmt.Errorf("%s resolves to %s, outside the work folder", clean, realDir)
	}
	return realDir, nil
}

// toolEnding words a tool call that did not return normally as the err the
// capsule receives; a deadline passed while the tool waited on the runtime
// also leaves a call_deadline line naming the tool and its call.
func (s *Session) toolEnding(t *tool, lim wasmhost.Limits, err error) error {
	name := t.decl.Name
	e := sandbox.EndingOf(err)
	if e.WaitedOnRuntime {
		s.recorder().CallDeadline(name, ToolRunCall, lim.Deadline)
	}
	switch {
	case e.Status == trace.EndDeadlineExceeded:
		return diag.New("E-RUN-064", "tool %s: %v (deadline %s)", name, e.Err, lim.Deadline)
	case e.Status == trace.EndResourceLimit, e.Cancelled:
		return diag.New("E-RUN-064", "tool %s: %v", name, e.Err)
	case e.Exited:
		return diag.New("E-RUN-064", "tool %s exited with status %d without returning a result", name, e.ExitCode)
	case e.Status == trace.EndTrapped:
		return diag.New("E-RUN-064", "tool %s trapped: %s", name, e.Reason)
	}
	return diag.Wrap(err, "E-RUN-064", "tool %s failed", name)
}

// newToolHost is what a tool's component may import besides WASI (the tool
// world): murmur:text/chunks is accepted and logged; murmur:task/task has no
// one to ask in a script capsule, so request-input stops the tool with an
// error saying so (its WIT result has no error side).
func (s *Session) newToolHost() *wasmhost.Host {
	h := wasmhost.NewHost()
	wit.GrantTextChunks(h, func(ctx context.Context, text string, thinking bool) error {
		s.log.Debug("tool chunk", "session", s.cfg.Session.ID, "thinking", thinking, "bytes", len(text))
		return nil
	})
	wit.GrantTask(h, func(ctx context.Context, prompt string) (string, error) {
		return "", errors.New("murmur:task/task#request-input: a script capsule's tool has no one to ask for input")
	})
	return h
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
