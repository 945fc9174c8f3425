package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/command"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/logfile"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
)

// Bounds of a shell call (docs/agent-capsules.md, issue 11 "Bad input").
const (
	// MaxShellStreamBytes is how much of each stream the model sees.
	MaxShellStreamBytes = 16 << 10
	// MaxCommandBytes bounds the command string: one of this size or
	// more is refused before anything runs.
	MaxCommandBytes = 1 << 20
	// maxTraceCommand bounds the command on the shell line; the log keeps
	// it whole.
	maxTraceCommand = 4 << 10
)

// ShellSchema is every shell tool's input schema.
var ShellSchema = json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)

// shells are the binaries that get "<binary> -c <command>"; every other
// binary gets the command split into its arguments.
var shells = map[string]bool{"bash": true, "sh": true, "dash": true, "zsh": true, "ksh": true, "fish": true}

// ShellEnv is what every shell tool of a session shares.
type ShellEnv struct {
	// Session gives the identity, the work folder and the records dir.
	Session *session.Session
	// Scope is capabilities.filesystem.scope (nil: the whole work folder),
	// the commands' working directory.
	Scope *string
	// EnvAllow is capabilities.env.allow: the names the host holds reach
	// every command.
	EnvAllow []string
	// Lookup reads mur's own environment (PATH, LANG, env.allow); nil is
	// os.LookupEnv.
	Lookup func(string) (string, bool)
	// Deadline is the call deadline (capabilities.limits.deadline_seconds,
	// defaults applied); 0 is none.
	Deadline time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL; 0 is 2 s.
	KillGrace time.Duration
	// ProxyEnv is added to every command's environment where the network
	// network namespace (docs/containment.md) applies (HTTP_PROXY=… and the rest); nil
	// until then.
	ProxyEnv []string
	// Wrap is containment's hook (command.Spec.Wrap); nil runs commands
	// uncontained.
	Wrap func(*exec.Cmd) error
}

func (e *ShellEnv) lookup(name string) (string, bool) {
	if e.Lookup == nil {
		return os.LookupEnv(name)
	}
	return e.Lookup(name)
}

// Environ is a command's whole environment (docs/agent-capsules.md): PATH and LANG
// from the host, HOME the session's own, the session's identity (MURMUR_* variables) with the host
// path of the runtime dir, the env.allow names the host holds, and ProxyEnv
// — nothing else. An env.allow entry cannot replace one of the others.
func (e *ShellEnv) Environ() []string {
	s := e.Session
	fixed := []string{
		"HOME=" + filepath.Join(s.RecordsDir, "home"),
		"MURMUR_SESSION_ID=" + s.ID,
		"MURMUR_CAPSULE_NAME=" + s.Name,
		"MURMUR_CAPSULE_VERSION=" + s.Version,
		"MURMUR_RUNTIME_DIR=" + s.RuntimeDir,
	}
	if s.CapsuleURL != "" {
		fixed = append(fixed, "MURMUR_CAPSULE_URL="+s.CapsuleURL)
	}
	var env []string
	for _, n := range []string{"PATH", "LANG"} {
		if v, ok := e.lookup(n); ok {
			env = append(env, n+"="+v)
		}
	}
	env = append(env, fixed...)
	// The runtime's own collector is never handed to a capsule's code.
	taken := map[string]bool{"PATH": true, "LANG": true, "HOME": true, "MURMUR_CAPSULE_URL": true, trace.EnvCollector: true}
	for _, kv := range append(fixed, e.ProxyEnv...) {
		k, _, _ := strings.Cut(kv, "=")
		taken[k] = true
	}
	for _, n := range e.EnvAllow {
		if taken[n] {
			continue
		}
		if v, ok := e.lookup(n); ok {
			env = append(env, n+"="+v)
			taken[n] = true
		}
	}
	return append(env, e.ProxyEnv...)
}

// Shell is the tool of one capabilities.shell.allow binary: named after
// it, it runs the model's command with that binary (docs/agent-capsules.md).
type Shell struct {
	binary string
	env    *ShellEnv
}

// NewShell is the tool of the bare binary name (the manifest refuses a name
// with a slash: E-MAN-012).
func NewShell(env *ShellEnv, binary string) *Shell { return &Shell{binary: binary, env: env} }

func (s *Shell) Name() string            { return s.binary }
func (s *Shell) Kind() string            { return KindShell }
func (s *Shell) Schema() json.RawMessage { return ShellSchema }

// Description says how the command runs.
func (s *Shell) Description() string {
	limit := ""
	if d := s.env.Deadline; d > 0 {
		limit = fmt.Sprintf(", for at most %s", d)
	}
	how := fmt.Sprintf("Runs `%s -c <command>`", s.binary)
	if !shells[s.binary] {
		how = fmt.Sprintf("Runs %s directly with <command> as its arguments (without %s itself; split like a shell: quotes and backslashes honoured, nothing expanded, no pipes or redirection)", s.binary, s.binary)
	}
	return how + " in the work folder, with stdin empty and a cleared environment" + limit + "; answers the exit code, stdout and stderr (each cut at 16 KiB)."
}

// ShellCall is one call of a shell tool.
type ShellCall struct {
	TaskID     string
	Turn       int
	ToolCallID string
	// Input is the model's JSON object, {"command": string}.
	Input json.RawMessage
	// Argv, when set, is a plan shell step's words, run as they are
	// (Argv[0] is this tool's binary), and Line its command line; Input is
	// then unused. Stdout is kept up to 64 KiB, the step's output bound.
	Argv []string
	Line string
}

// MaxStepOutputBytes is how much of a plan shell step's stdout is kept.
const MaxStepOutputBytes = 64 << 10

// ShellResult is a command that ran: the text the model sees and the shell
// trace line the caller writes (under the turn's inference line). A
// non-zero exit is data, not an error.
type ShellResult struct {
	Text string
	Line trace.Shell
	// Stdout and Stderr are the streams as the model sees them (each cut at
	// MaxShellStreamBytes): what an on-shell hook is given.
	Stdout, Stderr string
	// Ending is how the runtime ended the command ("" when it ended by
	// itself), as the text says it.
	Ending string
}

// CheckCall is a shell call's own checks, before the gate (Checker): the
// gate sees the resolved binary and the exact argv that would run.
func (s *Shell) CheckCall(_ context.Context, c *Call) (GateView, *Outcome) {
	if c.Task == nil {
		o := refuseScript(s, c.Name)
		return GateView{}, &o
	}
	_, bin, args, _, err := s.prepare(ShellCall{Input: []byte(dataOf(c.Input)), Argv: c.Argv, Line: c.Line})
	if err != nil {
		return GateView{}, &Outcome{Err: err}
	}
	return GateView{Binary: &bin, Argv: append([]string{bin}, args...)}, nil
}

// Call runs a model's command: one that ran is the call's Shell (its line
// is a shell line), one that could not run is the call's error. A script
// cannot invoke a shell tool.
func (s *Shell) Call(ctx context.Context, c *Call) Outcome {
	if c.Task == nil {
		return refuseScript(s, c.Name)
	}
	r, err := s.Run(ctx, ShellCall{TaskID: c.Task.TaskID, Turn: c.Task.Turn, ToolCallID: c.Task.ID, Input: []byte(dataOf(c.Input)),
		Argv: c.Argv, Line: c.Line})
	if err != nil {
		return Outcome{Err: err}
	}
	return Outcome{Shell: &r}
}

// prepare is a call's own checks: the input (or a plan step's words), the
// command's bounds and split, and the PATH lookup. It returns the command,
// the resolved binary, the arguments after it and the stdout bound.
func (s *Shell) prepare(c ShellCall) (cmdText, bin string, args []string, limit int, err error) {
	var in struct {
		Command *string `json:"command"`
	}
	if c.Argv != nil {
		in.Command = &c.Line
	} else if err := json.Unmarshal(c.Input, &in); err != nil || in.Command == nil {
		return "", "", nil, 0, diag.New("E-RUN-075", "the input to %s must be {\"command\": string}", s.binary)
	}
	cmdText = *in.Command
	switch {
	case len(cmdText) >= MaxCommandBytes:
		return "", "", nil, 0, diag.New("E-RUN-075", "the command given to %s is %d bytes: a command must be under %d bytes", s.binary, len(cmdText), MaxCommandBytes)
	case strings.IndexByte(cmdText, 0) >= 0:
		return "", "", nil, 0, diag.New("E-RUN-075", "the command given to %s holds a NUL byte, which no command line can carry", s.binary)
	}
	limit = MaxShellStreamBytes
	switch {
	case c.Argv != nil:
		args, limit = c.Argv[1:], MaxStepOutputBytes
	case shells[s.binary]:
		args = []string{"-c", cmdText}
	default:
		if args, err = SplitCommand(cmdText); err != nil {
			return "", "", nil, 0, diag.Wrap(err, "E-RUN-075", "the command given to %s cannot be split into arguments", s.binary)
		}
	}
	pathList, _ := s.env.lookup("PATH")
	if bin, err = lookPath(s.binary, pathList); err != nil {
		return "", "", nil, 0, diag.Wrap(err, "E-RUN-076", "%s is allowed by capabilities.shell.allow but does not resolve on the session's PATH", s.binary).
			WithHint("install it, or put its directory on the PATH mur runs with")
	}
	return cmdText, bin, args, limit, nil
}

// Run runs one call. The error is a call that ran nothing — input that is
// not {"command": string}, a command with a NUL byte or of 1 MiB or more, a
// quote left open, a binary PATH does not resolve, a command that could
// not start — and is the error result the model sees.
func (s *Shell) Run(ctx context.Context, c ShellCall) (ShellResult, error) {
	cmdText, bin, args, limit, err := s.prepare(c)
	if err != nil {
		return ShellResult{}, err
	}
	sess := s.env.Session
	dir, err := scopeDir(sess.Workdir, s.env.Scope)
	if err != nil {
		return ShellResult{}, diag.Wrap(err, "E-RUN-065", "shell tool %s: its filesystem scope cannot be opened", s.binary)
	}
	if err := os.MkdirAll(filepath.Join(sess.RecordsDir, "home"), 0o700); err != nil {
		return ShellResult{}, diag.Wrap(err, "E-RUN-077", "shell tool %s: the session's HOME cannot be made", s.binary)
	}
	logPath, logFile, err := s.openLog(c.ToolCallID)
	if err != nil {
		return ShellResult{}, diag.Wrap(err, "E-RUN-077", "shell tool %s: its log cannot be made", s.binary)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "$ %s\n", cmdText)

	r, err := command.Run(ctx, command.Spec{
		Path: bin, Args: args, Env: s.env.Environ(), Dir: dir,
		Deadline: s.env.Deadline, KillGrace: s.env.KillGrace,
		Limit: limit, Log: logFile, Wrap: s.env.Wrap,
	})
	if err != nil {
		fmt.Fprintf(logFile, "[not started: %v]\n", err)
		return ShellResult{}, diag.Wrap(err, "E-RUN-078", "%s could not start", bin)
	}
	ending := endingOf(r, s.env.Deadline, s.env.KillGrace)
	fmt.Fprintf(logFile, "\n[exit code %d%s]\n", r.ExitCode, ending)

	out, err1 := cutStream(r.Stdout, r.StdoutBytes)
	errs, err2 := cutStream(r.Stderr, r.StderrBytes)
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\nExit code: %d\n", cmdText, r.ExitCode)
	if ending != "" {
		fmt.Fprintf(&b, "The command%s.\n", ending)
	}
	fmt.Fprintf(&b, "Stdout:\n%s", out)
	if !strings.HasSuffix(out, "\n") && out != "" {
		b.WriteByte('\n')
	}
	b.WriteString(err1)
	fmt.Fprintf(&b, "Stderr:\n%s", errs)
	if !strings.HasSuffix(errs, "\n") && errs != "" {
		b.WriteByte('\n')
	}
	b.WriteString(err2)
	if d := logFile.Dropped(); d > 0 {
		fmt.Fprintf(&b, "The output is in %s: its first %d and last %d bytes (%d bytes between were dropped)\n", logPath, logfile.LogHeadBytes, logfile.LogTailBytes, d)
	} else {
		fmt.Fprintf(&b, "The whole output is in %s\n", logPath)
	}

	line := trace.Shell{
		TaskID: c.TaskID, Turn: c.Turn, ToolCallID: c.ToolCallID,
		Binary: bin, Command: clipTo(cmdText, maxTraceCommand), ExitCode: r.ExitCode,
		StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes,
		DurationMS: r.Duration.Milliseconds(), Truncated: r.Truncated(), LogPath: logPath,
	}
	return ShellResult{Text: b.String(), Line: line, Stdout: out, Stderr: errs, Ending: ending}, nil
}

// endingOf is what the result says of a command the runtime ended ("" for
// one that ended by itself).
func endingOf(r command.Result, deadline, grace time.Duration) string {
	if grace <= 0 {
		grace = command.DefaultKillGrace
	}
	var s string
	switch {
	case r.TimedOut:
		s = fmt.Sprintf(" ran past its deadline of %s: its process group got SIGTERM", deadline)
	case r.Canceled:
		s = " was stopped because the task ended: its process group got SIGTERM"
	default:
		return ""
	}
	if r.Killed {
		s += fmt.Sprintf(", then SIGKILL %s later", grace)
	}
	return s
}

// openLog creates logs/shell/<tool_call_id>.log in the records dir; an id
// that cannot name a file gets a minted one.
func (s *Shell) openLog(callID string) (string, *logfile.CappedLog, error) {
	name := callID
	if !fileSafe(name) {
		name = ids.New(ids.Event)
	}
	dir := filepath.Join(s.env.Session.RecordsDir, "logs", "shell")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, name+".log")
	// Capped as a script's logs are (head and tail, logfile.LogHeadBytes
	// and LogTailBytes): a command printing without end must not fill the
	// disk through its log.
	f, err := logfile.NewCappedLog(path, 0, 0, false)
	return path, f, err
}

// cutStream is the text of a stream's kept head, cut back to a whole
// character, and a note when the stream was longer.
func cutStream(kept []byte, total int64) (string, string) {
	if int64(len(kept)) >= total {
		return string(kept), ""
	}
	n := len(kept)
	// Drop a character the limit split: back up to its first byte and
	// keep it only when it is whole.
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(kept[i]) {
			if !utf8.FullRune(kept[i:n]) {
				n = i
			}
			break
		}
	}
	return string(kept[:n]), fmt.Sprintf("[cut at %d of %d bytes]\n", n, total)
}

func clipTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}

// fileSafe reports whether a driver-given id can name a file (a plan
// step's call id joins the call's id, the step's and the attempt with dots).
func fileSafe(s string) bool {
	if s == "" || len(s) > 200 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// lookPath finds the bare name in the directories of pathList (the
// session's PATH, not mur's own lookup): the first regular, executable
// file. Relative directories are skipped, so the work folder is never
// searched by accident.
func lookPath(name, pathList string) (string, error) {
	if pathList == "" {
		return "", errors.New("PATH is empty")
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("no executable %s in %s", name, pathList)
}

// SplitCommand splits a command into arguments the way a POSIX shell splits
// words, expanding nothing: blanks separate words; '…' keeps everything
// literally; "…" keeps everything but lets a backslash escape $ ` " \ and
// a newline; a backslash outside quotes keeps the next character (and
// drops a backslash-newline). $, *, ~, |, ;, > and the rest are plain
// characters. An open quote or a final lone backslash is an error.
func SplitCommand(s string) ([]string, error) {
	var args []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				args = append(args, word.String())
				word.Reset()
				inWord = false
			}
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("it ends with a lone backslash")
			}
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case ch == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("the single quote at byte %d is never closed", i)
			}
			word.WriteString(s[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		case ch == '"':
			start := i
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						word.WriteByte(s[i])
					}
					continue
				}
				word.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("the double quote at byte %d is never closed", start)
			}
			inWord = true
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		args = append(args, word.String())
	}
	return args, nil
}
