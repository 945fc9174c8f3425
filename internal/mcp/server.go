// Package mcp is the runtime's Model Context Protocol client for an agent's
// tool servers: starting a server (a stdio process through the command
// launcher and its containment, or a Streamable HTTP endpoint), the
// handshake, the listing and the calls over the official Go SDK, the result
// mapping, restarts and shutdown, and the server's trace lines.
package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/murmur-go/murmur/internal/command"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/trace"
)

// Bounds (docs/mcp.md).
const (
	// MaxMessageBytes bounds one JSON-RPC message, HTTP body or event.
	MaxMessageBytes = 16 << 20
	// MaxPages bounds one listing.
	MaxPages = 100
	// MaxSchemaBytes bounds a tool's input schema as compact JSON.
	MaxSchemaBytes = 64 << 10
	// MaxDescriptionBytes is where a description is cut.
	MaxDescriptionBytes = 4 << 10
	// MaxRestarts is how often a server is started again in a session.
	MaxRestarts = 2
	// MaxDeniedLines bounds a server's mcp_denied lines in a session.
	MaxDeniedLines = 100
	// MaxLogBytes bounds each of a server's logs in a session.
	MaxLogBytes = 16 << 20
	// StopGrace is the time between closing stdin and SIGTERM, and between
	// SIGTERM and SIGKILL.
	StopGrace = 2 * time.Second
)

// Lines is where a server's lines go (*trace.Recorder is one).
type Lines interface {
	EmitUnder(parent string, ev any) string
}

// Config is one server as the launch decided it.
type Config struct {
	// Entry is the manifest's artifacts[] entry (runtime: mcp).
	Entry manifest.Artifact
	// Grant is the entry's effective grant.
	Grant manifest.GrantSet
	// ClientVersion is mur's version, sent as the client's identity.
	ClientVersion string
	// RecordsDir holds logs/mcp/ and mcp/<server>/home.
	RecordsDir string
	// Workdir is the absolute work folder (or scope): the server's working
	// directory and ${MURMUR_WORKDIR}.
	Workdir string
	// Lookup reads mur's own environment (PATH, LANG, env.allow).
	Lookup func(string) (string, bool)
	// Identity are the MURMUR_* variables a server gets.
	Identity []string
	// ProxyEnv is the proxy variables where the network namespace applies.
	ProxyEnv []string
	// WrapFor is the containment of a stdio server whose binary resolved to
	// bin; nil runs it uncontained (only tests do).
	WrapFor func(bin string) (func(*exec.Cmd) error, error)
	// Containment is the tier a stdio server runs under (for the line).
	Containment *trace.MCPContainment
	// Deadline bounds one call; 0 is 600 s.
	Deadline time.Duration
	// Lines receives the server's lines; nil records none.
	Lines Lines
	// Warn prints a warning (W-RUN-020); nil drops it.
	Warn func(diag.Warning)
	// Log is the runtime's logger; nil discards.
	Log *slog.Logger
}

// Tool is one offered tool.
type Tool struct {
	Name        string // the server's name for it
	ModelName   string // mcp__<server>__<tool>
	Description string
	Schema      json.RawMessage
}

// Server is one declared server for the session: its first start's tools,
// its current process or connection, its restarts.
type Server struct {
	cfg    Config
	name   string // bare name
	sem    chan struct{}
	tools  []Tool
	era    string
	logs   *logs
	denyMu sync.Mutex
	denied int // lines written this session
	// addr is an HTTP server's url host resolved at its first start: every
	// start and connection dials it.
	addr string

	mu       sync.Mutex
	cur      *instance
	starts   int
	restarts int
	stopped  bool
	callID   string
}

// instance is one start.
type instance struct {
	n       int
	began   time.Time
	proc    *command.Process
	cs      *sdk.ClientSession
	tr      *transport
	lr      *lineReader
	tail    *tailBuf
	calls   atomic.Int64
	errors  atomic.Int64
	denied  atomic.Int64
	ended   chan struct{}
	endOnce sync.Once
	reason  string
	// stopping is set when the runtime ends the start itself (the
	// session's end): what follows is not the server ending.
	stopping atomic.Bool
}

// New prepares a server; Start starts it.
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = time.Duration(manifest.DefaultDeadlineSeconds) * time.Second
	}
	s := &Server{cfg: cfg, name: manifest.Bare(cfg.Entry.Name), sem: make(chan struct{}, 1)}
	s.logs = newLogs(filepath.Join(cfg.RecordsDir, "logs", "mcp"), s.name)
	return s
}

// Name is the server's bare name.
func (s *Server) Name() string { return s.name }

// Transport is "stdio" or "http".
func (s *Server) Transport() string { return s.cfg.Entry.MCP.Transport() }

// Protocol is the protocol version the first start negotiated.
func (s *Server) Protocol() string { return s.era }

// Tools are the offered tools, in manifest order (set by the first start).
func (s *Server) Tools() []Tool { return s.tools }

// Start is the server's first start, at launch.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked(ctx, true)
}

// startLocked makes one start: process or connection, handshake, listing.
// It writes mcp_server_start, and for a start that failed its
// mcp_server_end start_failed.
func (s *Server) startLocked(ctx context.Context, first bool) error {
	c := s.cfg.Entry.MCP
	s.starts++
	inst := &instance{n: s.starts, began: time.Now(), ended: make(chan struct{}), tail: &tailBuf{}}
	line := trace.MCPServerStart{Server: s.name, Name: s.cfg.Entry.Name, Version: s.cfg.Entry.Version, Start: inst.n,
		Transport: c.Transport(), Tools: []trace.MCPToolDef{}}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(c.Start())*time.Second)
	defer cancel()
	err := s.connect(ctx, inst, &line)
	var listed []*sdk.Tool
	if err == nil {
		listed, err = s.list(ctx, inst)
	}
	var tools []pickedTool
	if err == nil {
		line.Listed = len(listed)
		tools, err = s.pick(listed)
	}
	if err == nil {
		for _, t := range tools {
			line.Tools = append(line.Tools, trace.MCPToolDef{Name: t.Name, ModelName: t.ModelName, SHA256: t.sum})
		}
	}
	if err != nil {
		err = s.startError(ctx, inst, err)
	}
	line.DurationMS = time.Since(inst.began).Milliseconds()
	if inst.cs != nil {
		if r := inst.cs.InitializeResult(); r != nil {
			line.ProtocolVersion = r.ProtocolVersion
			if r.ServerInfo != nil {
				line.ServerInfo = trace.MCPServerInfo{Name: r.ServerInfo.Name, Version: r.ServerInfo.Version}
			}
		}
	}
	if err != nil {
		msg := err.Error()
		line.Status, line.Error = "error", &msg
		s.emit(line)
		s.end(inst, "start_failed", true)
		return err
	}
	line.Status = "ok"
	if first {
		s.tools = make([]Tool, len(tools))
		for i, t := range tools {
			s.tools[i] = t.Tool
		}
		s.era = line.ProtocolVersion
	}
	s.emit(line)
	if v := line.ServerInfo.Version; v != s.cfg.Entry.Version && s.cfg.Warn != nil {
		s.cfg.Warn(diag.Warn("W-RUN-020", "the MCP server %s reported version %q; its entry declares %q", s.name, v, s.cfg.Entry.Version))
	}
	s.cur = inst
	go s.watch(inst)
	return nil
}

// connect starts the process (stdio) or reaches the endpoint (http) and
// makes the handshake.
func (s *Server) connect(ctx context.Context, inst *instance, line *trace.MCPServerStart) error {
	c := s.cfg.Entry.MCP
	client := sdk.NewClient(&sdk.Implementation{Name: "mur", Version: s.cfg.ClientVersion}, &sdk.ClientOptions{
		Capabilities:   &sdk.ClientCapabilities{},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
	hooks := connHooks{denied: func(m string) { s.deny(inst, m) }, note: s.note}
	var inner sdk.Transport
	if c.URL != "" {
		u := c.URL
		line.URL = &u
		line.HeaderNames = []string{}
		for _, h := range c.Headers {
			line.HeaderNames = append(line.HeaderNames, h.Name)
		}
		if s.addr == "" {
			addr, err := resolveURL(ctx, c.URL)
			if err != nil {
				return diag.Wrap(err, "E-RUN-152", "the MCP server %s could not be started: its url's host does not resolve", s.name)
			}
			s.addr = addr
		}
		inner = &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: httpClient(c.Headers, s.addr),
			MaxRetries: -1, DisableStandaloneSSE: true, MaxEventSize: MaxMessageBytes}
	} else {
		bin, sum, err := s.resolve()
		if err != nil {
			return err
		}
		line.Binary, line.BinarySHA256 = &bin, &sum
		line.Args = s.args()
		line.EnvNames = []string{}
		line.Containment = s.cfg.Containment
		env, names := s.environ()
		line.EnvNames = names
		var wrap func(*exec.Cmd) error
		if s.cfg.WrapFor != nil {
			if wrap, err = s.cfg.WrapFor(bin); err != nil {
				return diag.Wrap(err, "E-RUN-150", "the MCP server %s cannot start: its containment plan cannot be made", s.name)
			}
		}
		home := s.home()
		if err := os.MkdirAll(home, 0o700); err != nil {
			return diag.Wrap(err, "E-RUN-150", "the MCP server %s cannot start: its HOME cannot be made", s.name)
		}
		fmt.Fprintf(s.logs.stderr, "--- start %d %s ---\n", inst.n, time.Now().UTC().Format(time.RFC3339))
		proc, err := command.Start(command.Spec{Path: bin, Args: line.Args, Env: env, Dir: s.cfg.Workdir,
			Wrap: wrap, Log: io.MultiWriter(s.logs.stderr, inst.tail)})
		if err != nil {
			return diag.Wrap(err, "E-RUN-150", "the MCP server %s could not start", s.name)
		}
		inst.proc = proc
		pid := proc.Pid
		line.PID = &pid
		inst.lr = &lineReader{r: proc.Stdout, limit: MaxMessageBytes}
		inner = &sdk.IOTransport{Reader: io.NopCloser(inst.lr), Writer: proc.Stdin, MaxLineLength: MaxMessageBytes + 1<<10}
	}
	inst.tr = &transport{inner: inner, hooks: hooks}
	opts := &sdk.ClientSessionOptions{}
	if s.era != "" && s.era < "2026-07-28" {
		opts.ProtocolVersion = s.era // a restart reuses the era found first
	}
	cs, err := client.Connect(ctx, inst.tr, opts)
	if err != nil {
		return err
	}
	inst.cs = cs
	if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Tools == nil {
		return diag.New("E-RUN-153", "the MCP server %s does not offer tools (no tools capability)", s.name)
	}
	return nil
}

// list reads the listing until every allow-listed tool is found or no
// page is left, at most MaxPages pages.
func (s *Server) list(ctx context.Context, inst *instance) ([]*sdk.Tool, error) {
	want := map[string]bool{}
	for _, t := range s.cfg.Entry.MCP.Tools {
		want[t] = true
	}
	var out []*sdk.Tool
	cursor := ""
	for page := 0; page < MaxPages; page++ {
		res, err := inst.cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			out = append(out, t)
			delete(want, t.Name)
		}
		if len(want) == 0 || res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return out, nil
}

type pickedTool struct {
	Tool
	sum string
}

// pick keeps the allow-listed definitions, in manifest order.
func (s *Server) pick(listed []*sdk.Tool) ([]pickedTool, error) {
	byName := map[string]*sdk.Tool{}
	for _, t := range listed {
		if _, dup := byName[t.Name]; dup {
			fmt.Fprintf(s.logs.notes, "the listing names the tool %q twice: the first definition is used\n", t.Name)
			continue
		}
		byName[t.Name] = t
	}
	var out []pickedTool
	for _, name := range s.cfg.Entry.MCP.Tools {
		t, ok := byName[name]
		if !ok {
			return nil, diag.New("E-RUN-154", "the MCP server %s does not list the tool %s (within %d pages)", s.name, name, MaxPages).
				WithHint("name in mcp.tools only tools the server lists")
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || !schemaOK(schema) {
			return nil, diag.New("E-RUN-154", "the MCP server %s lists the tool %s with an unusable input schema: it must be a JSON object whose type is \"object\", at most %d bytes", s.name, name, MaxSchemaBytes)
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, schema)
		schema = buf.Bytes()
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if desc == "" {
			desc = fmt.Sprintf("the tool %s of the MCP server %s", name, s.name)
		}
		def, _ := json.Marshal(struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema any    `json:"inputSchema"`
		}{t.Name, t.Description, t.InputSchema})
		sum := sha256.Sum256(def)
		out = append(out, pickedTool{Tool: Tool{Name: name, ModelName: manifest.MCPModelName(s.name, name),
			Description: cutDescription(desc), Schema: schema}, sum: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

func schemaOK(b []byte) bool {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil || buf.Len() > MaxSchemaBytes {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		return false
	}
	var typ string
	return json.Unmarshal(obj["type"], &typ) == nil && typ == "object"
}

func cutDescription(d string) string {
	if len(d) <= MaxDescriptionBytes {
		return d
	}
	n := MaxDescriptionBytes
	for n > 0 && !utf8.RuneStart(d[n]) {
		n--
	}
	return d[:n] + " […]"
}

// startError is the diagnostic of a start that failed, and ends what the
// start left running.
func (s *Server) startError(ctx context.Context, inst *instance, err error) error {
	var d *diag.Diagnostic
	if errors.As(err, &d) {
		s.kill(inst)
		return err
	}
	exited := false
	if inst.proc != nil {
		select {
		case <-inst.proc.Exited():
			exited = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	lr := inst.lr
	var out error
	switch {
	case lr != nil && lr.over():
		out = diag.New("E-RUN-158", "the MCP server %s sent a message over 16 MiB while starting", s.name)
	case lr != nil && garbageOf(lr) != "":
		out = diag.New("E-RUN-153", "the MCP server %s wrote a line on stdout that is not JSON-RPC: %q", s.name, garbageOf(lr)).
			WithHint("a stdio server must write only MCP messages to stdout (logs go to stderr)")
	case ctx.Err() != nil:
		out = diag.New("E-RUN-151", "the MCP server %s was not ready within %d s (mcp.start_seconds): no answer to the handshake or the listing", s.name, s.cfg.Entry.MCP.Start())
	case exited:
		r := inst.proc.Result()
		how := fmt.Sprintf("status %d", r.ExitCode)
		if r.Signal != "" {
			how = "signal " + r.Signal
		}
		out = diag.New("E-RUN-152", "the MCP server %s exited while starting (%s)%s", s.name, how, inst.tail.lastLines(20))
	default:
		code := "E-RUN-152"
		var he *httpStatusError
		if errors.As(err, &he) && (he.code == 401 || he.code == 403) {
			code = "E-RUN-155"
		}
		out = diag.Wrap(err, code, "the MCP server %s could not be started", s.name)
		if he != nil && code == "E-RUN-155" {
			out = diag.New(code, "the MCP server %s answered %d (headers sent: %s)%s", s.name, he.code, he.headers, he.oauth)
		}
	}
	s.kill(inst)
	return out
}

func garbageOf(lr *lineReader) string {
	g, _ := lr.garbage()
	return g
}

// kill ends a start's process or connection at once.
func (s *Server) kill(inst *instance) {
	if inst.cs != nil {
		_ = inst.cs.Close()
	}
	if inst.proc != nil {
		inst.proc.Kill()
	}
}

// watch writes mcp_server_end when a running start ends by itself.
func (s *Server) watch(inst *instance) {
	var exited <-chan struct{}
	if inst.proc != nil {
		exited = inst.proc.Exited()
	}
	waited := make(chan struct{})
	go func() { _ = inst.cs.Wait(); close(waited) }()
	select {
	case <-inst.ended:
		return
	case <-exited:
	case <-waited:
	}
	if inst.stopping.Load() {
		return
	}
	reason := "exited"
	switch {
	case inst.lr != nil && inst.lr.over():
		reason = "message_too_large"
	case inst.lr != nil && garbageOf(inst.lr) != "":
		reason = "protocol_error"
	case inst.proc == nil:
		reason = "transport_error"
	}
	s.mu.Lock()
	if s.cur == inst {
		s.cur = nil
	}
	s.mu.Unlock()
	s.kill(inst)
	s.end(inst, reason, false)
}

// end writes a start's one mcp_server_end.
func (s *Server) end(inst *instance, reason string, failed bool) {
	inst.endOnce.Do(func() {
		inst.reason = reason
		close(inst.ended)
		line := trace.MCPServerEnd{Server: s.name, Start: inst.n, Reason: reason, Calls: int(inst.calls.Load()),
			Errors: int(inst.errors.Load()), Denied: int(inst.denied.Load()), LogPath: s.logs.stderrPath, DurationMS: time.Since(inst.began).Milliseconds()}
		if inst.proc != nil {
			select {
			case <-inst.proc.Exited():
				r := inst.proc.Result()
				code := r.ExitCode
				line.ExitCode = &code
				if r.Signal != "" {
					sig := r.Signal
					line.Signal = &sig
				}
			default:
			}
			line.StderrBytes = inst.proc.StderrBytes()
		}
		s.emit(line)
	})
}

// Stop ends the server at the session's end: stdin closed, SIGTERM after
// StopGrace, SIGKILL after StopGrace more.
func (s *Server) Stop() {
	s.mu.Lock()
	inst := s.cur
	s.cur, s.stopped = nil, true
	s.mu.Unlock()
	if inst != nil {
		select {
		case <-inst.ended:
		default:
			inst.stopping.Store(true)
			if inst.proc != nil {
				inst.proc.Stop(StopGrace)
			}
			if inst.cs != nil {
				_ = inst.cs.Close()
			}
			s.end(inst, "session_end", false)
		}
	}
	s.logs.close()
}

// Result is one call's outcome as the tools entry reports it.
type Result struct {
	Text string
	// Err is a call that failed (its text is what the model sees after
	// "error: "); IsError a result the server marked isError.
	Err     error
	IsError bool
	// Ending is ok, deadline_exceeded, resource_limit or failed.
	Ending string
}

// Call runs one tools/call. Calls to one server are never concurrent.
func (s *Server) Call(ctx context.Context, tool string, args json.RawMessage, callID, traceparent string) Result {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{Err: diag.New("E-RUN-157", "the call of %s was cancelled before it started", tool), Ending: "failed"}
	}
	defer func() { <-s.sem }()
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return Result{Err: diag.New("E-RUN-156", "the MCP server %s has stopped: the session is ending", s.name), Ending: "failed"}
	}
	inst := s.cur
	if inst != nil {
		select {
		case <-inst.ended:
			inst = nil
		default:
		}
	}
	if inst == nil {
		if s.restarts >= MaxRestarts {
			s.mu.Unlock()
			return Result{Err: diag.New("E-RUN-156", "the MCP server %s ended and was started again %d times: it is not started again in this session", s.name, MaxRestarts), Ending: "failed"}
		}
		s.restarts++
		if err := s.startLocked(ctx, false); err != nil {
			s.mu.Unlock()
			return Result{Err: err, Ending: "failed"}
		}
		inst = s.cur
	}
	s.callID = callID
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.callID = ""
		s.mu.Unlock()
	}()
	r := s.call(ctx, inst, tool, args, callID, traceparent)
	inst.calls.Add(1)
	if r.Err != nil || r.IsError {
		inst.errors.Add(1)
	}
	return r
}

func (s *Server) call(ctx context.Context, inst *instance, tool string, args json.RawMessage, callID, traceparent string) Result {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
	defer cancel()
	p := &sdk.CallToolParams{Name: tool, Arguments: args}
	if traceparent != "" {
		p.Meta = sdk.Meta{"traceparent": traceparent}
	}
	res, err := inst.cs.CallTool(cctx, p)
	raw := inst.tr.made.takeResult()
	if err != nil && raw == nil {
		var we *jsonrpc.Error
		switch {
		case errors.As(err, &we):
			return Result{Err: fmt.Errorf("the MCP server %s answered %d: %s", s.name, we.Code, clip(we.Message, 1024)), Ending: "ok"}
		case inst.lr != nil && inst.lr.over():
			s.kill(inst)
			s.end(inst, "message_too_large", false)
			return Result{Err: diag.New("E-RUN-158", "the MCP server %s answered with a message over 16 MiB: nothing past it is held, and the server was ended (it is started again on the next call)", s.name), Ending: "resource_limit"}
		case cctx.Err() != nil && ctx.Err() == nil:
			return Result{Err: diag.New("E-RUN-157", "the call of %s ran past its deadline of %s: notifications/cancelled was sent", tool, s.cfg.Deadline), Ending: "deadline_exceeded"}
		case ctx.Err() != nil:
			return Result{Err: diag.New("E-RUN-157", "the call of %s was cancelled because its task ended: notifications/cancelled was sent", tool), Ending: "deadline_exceeded"}
		}
		select {
		case <-inst.ended:
		case <-time.After(200 * time.Millisecond):
		}
		return Result{Err: diag.Wrap(err, "E-RUN-156", "the call of %s got no answer from the MCP server %s", tool, s.name), Ending: "failed"}
	}
	if raw == nil {
		raw, _ = json.Marshal(res)
	}
	kept := filepath.Join(s.cfg.RecordsDir, "logs", "tools", fileName(callID)+".mcp.json")
	m, merr := MapResult(raw, kept)
	if merr != nil {
		return Result{Err: diag.Wrap(merr, "E-RUN-156", "the MCP server %s answered the call of %s with a result that cannot be read", s.name, tool), Ending: "failed"}
	}
	if m.Hidden {
		_ = os.MkdirAll(filepath.Dir(kept), 0o700)
		_ = os.WriteFile(kept, raw, 0o600)
	}
	if m.InputRequired != nil {
		for _, meth := range m.InputRequired {
			s.deny(inst, meth)
		}
		return Result{Err: diag.New("E-RUN-159", "the MCP server %s answered the call of %s with input_required (%s), which murmur does not provide", s.name, tool, strings.Join(m.InputRequired, ", ")), Ending: "ok"}
	}
	if m.IsError {
		return Result{Err: errors.New(m.Text), IsError: true, Ending: "ok"}
	}
	return Result{Text: m.Text, Ending: "ok"}
}

// deny records one refused request of the server's.
func (s *Server) deny(inst *instance, method string) {
	inst.denied.Add(1)
	s.denyMu.Lock()
	s.denied++
	n := s.denied
	s.denyMu.Unlock()
	if n > MaxDeniedLines {
		return
	}
	s.mu.Lock()
	id := s.callID
	s.mu.Unlock()
	line := trace.MCPDenied{Server: s.name, Method: method}
	if id != "" {
		line.ToolCallID = &id
	}
	s.emit(line)
}

// note logs a server's notifications (messages, progress, list changes):
// they change nothing.
func (s *Server) note(method string, params json.RawMessage) {
	switch method {
	case "notifications/message", "notifications/progress", "notifications/tools/list_changed":
		fmt.Fprintf(s.logs.notes, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339), method, clip(string(params), 4096))
	}
}

func (s *Server) emit(ev any) {
	if s.cfg.Lines != nil {
		s.cfg.Lines.EmitUnder("", ev)
	}
}

// home is the server's own HOME, kept across its restarts.
func (s *Server) home() string { return filepath.Join(s.cfg.RecordsDir, "mcp", s.name, "home") }

func (s *Server) args() []string {
	out := make([]string, 0, len(s.cfg.Entry.MCP.Args))
	for _, a := range s.cfg.Entry.MCP.Args {
		out = append(out, strings.ReplaceAll(a, manifest.MCPWorkdirPlaceholder, s.cfg.Workdir))
	}
	return out
}

func (s *Server) lookup(n string) (string, bool) {
	if s.cfg.Lookup == nil {
		return os.LookupEnv(n)
	}
	return s.cfg.Lookup(n)
}

// environ is a stdio server's whole environment (docs/mcp.md): PATH and
// LANG from the host, its own HOME, the session's identity, the entry's own
// env.allow names the host holds, the proxy variables, the mcp.env
// literals — nothing else. names lists them by name for the line.
func (s *Server) environ() (env, names []string) {
	add := func(k, v string) {
		env = append(env, k+"="+v)
		names = append(names, k)
	}
	for _, n := range []string{"PATH", "LANG"} {
		if v, ok := s.lookup(n); ok {
			add(n, v)
		}
	}
	add("HOME", s.home())
	for _, kv := range s.cfg.Identity {
		k, v, _ := strings.Cut(kv, "=")
		add(k, v)
	}
	taken := map[string]bool{}
	for _, n := range names {
		taken[n] = true
	}
	for _, kv := range s.cfg.ProxyEnv {
		k, _, _ := strings.Cut(kv, "=")
		taken[k] = true
	}
	for _, n := range s.cfg.Grant.EnvAllow {
		if taken[n] {
			continue
		}
		if v, ok := s.lookup(n); ok {
			add(n, v)
			taken[n] = true
		}
	}
	for _, kv := range s.cfg.ProxyEnv {
		k, v, _ := strings.Cut(kv, "=")
		add(k, v)
	}
	for _, kv := range s.cfg.Entry.MCP.Env {
		add(kv.Name, strings.ReplaceAll(kv.Value, manifest.MCPWorkdirPlaceholder, s.cfg.Workdir))
	}
	return env, names
}

// resolve finds the command in the entry's install_dirs, then on the
// session's PATH (relative entries skipped), and hashes the file it
// resolves to.
func (s *Server) resolve() (bin, sum string, err error) {
	c := s.cfg.Entry.MCP
	var dirs []string
	for _, d := range c.InstallDirs {
		dirs = append(dirs, d, filepath.Join(d, ".bin"), filepath.Join(d, "bin"), filepath.Join(d, "node_modules", ".bin"))
	}
	path, _ := s.lookup("PATH")
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, c.Command)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			bin = p
			break
		}
	}
	if bin == "" {
		return "", "", diag.New("E-RUN-150", "the MCP server %s cannot start: %s is not on the session's PATH or in mcp.install_dirs", s.name, c.Command).
			WithHint("install it under the system dirs (npm install -g as root puts it under /usr/local), or name its folder in mcp.install_dirs")
	}
	f, err := os.Open(bin) // follows symlinks: the file that runs
	if err != nil {
		return "", "", diag.Wrap(err, "E-RUN-150", "the MCP server %s cannot start: %s cannot be read", s.name, bin)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", "", diag.Wrap(err, "E-RUN-150", "the MCP server %s cannot start: %s cannot be read", s.name, bin)
	}
	return bin, hex.EncodeToString(h.Sum(nil)), nil
}

// Binary is where the command resolves now ("" and false when it does not).
func (s *Server) Binary() (string, bool) {
	if s.cfg.Entry.MCP.Command == "" {
		return "", false
	}
	b, _, err := s.resolve()
	return b, err == nil
}

func fileName(id string) string {
	if id == "" || len(id) > 128 {
		return fmt.Sprintf("call-%d", time.Now().UnixNano())
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Sprintf("call-%d", time.Now().UnixNano())
		}
	}
	return id
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// httpStatusError is an HTTP answer the runtime's client refused.
type httpStatusError struct {
	code    int
	headers string
	oauth   string
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("HTTP status %d", e.code) }

var _ = http.StatusOK
