// Package door is an agent capsule's A2A 1.0 door (docs/door.md): a plain
// front handler that owns the A2A-Version check, the body bound, murmur's own
// method murmur.StopSession and errors, and routing by x-murmur-task-origin,
// in front of a2a-go's JSON-RPC handler (the wire) over the door's own
// request handler (handler.go); and the tasks and their lifecycle
// (task_acceptance, after_task, queue, cancel, input).
//
// The door runs no model. Each task is handed to a Runner (the inference
// loop), which streams through Events and returns an Outcome.
package door

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// MaxBodyBytes bounds a POST / body; a longer one is -32600 and nothing past
// the bound is read.
const MaxBodyBytes = 4 << 20

// A2A 1.0 methods the door does not serve, answered with their own errors.
const (
	methodGetPushConfig    = "GetTaskPushNotificationConfig"
	methodCreatePushConfig = "CreateTaskPushNotificationConfig"
	methodListPushConfigs  = "ListTaskPushNotificationConfigs"
	methodDeletePushConfig = "DeleteTaskPushNotificationConfig"
	methodGetExtendedCard  = "GetExtendedAgentCard"
)

// The lifecycle words of the manifest (lifecycle.task_acceptance and
// lifecycle.after_task, docs/manifest.md).
const (
	AcceptNone   = "none"
	AcceptSingle = "single"
	AcceptQueue  = "queue"
	AfterExit    = "exit"
	AfterSleep   = "sleep"
)

// Config is what a door needs to know about its session.
type Config struct {
	Name      string // full capsule name, scope/name
	Version   string
	SessionID string
	URL       string // http://127.0.0.1:PORT

	TaskAcceptance string // none | single | queue; "" is single
	QueueDepth     int    // for queue; < 1 is 1
	AfterTask      string // exit | sleep; "" is exit

	// What the door keeps of ended tasks (for GetTask, ListTasks and
	// SubscribeToTask); zero is the default. Past any bound the oldest ended
	// tasks are forgotten (-32001 from then on); their trace lines stay.
	MaxEndedTasks int           // ended tasks kept; DefaultMaxEndedTasks
	EndedTaskTTL  time.Duration // how long an ended task is kept; DefaultEndedTaskTTL
	MaxKeptBytes  int64         // message, reply and answer bytes of the kept ended tasks; DefaultMaxKeptBytes

	// Authenticate is the seam for the manifest's network.authentication:
	// when set, it is asked about each POST / that is not a
	// completion, after the same-user rule (Serve) and before the body is
	// read; a non-nil Refusal is sent as it is. Nil (today) checks no token.
	Authenticate func(r *http.Request) *Refusal
	// Auth, when set, is the door's bearer authentication and peer consent
	// (auth.go), checked at the same point.
	Auth *Auth

	// PeerFiles answers GET /resources/peer/<handle> (and every other
	// request under /resources/peer), ahead of any token check: the handle
	// is the credential (docs/peer-files.md). Nil answers 404.
	PeerFiles http.Handler

	Runner      Runner            // required
	Recorder    Recorder          // nil records nothing
	Completions CompletionHandler // nil answers every completion COMPLETION_NOT_AWAITED
	Logger      *slog.Logger      // nil is slog.Default()
}

// The defaults of the door's bounds on ended tasks (Config). A message's
// bytes are bounded by MaxBodyBytes, live tasks by task_acceptance and
// lifecycle.queue_depth.
const (
	DefaultMaxEndedTasks = 100
	DefaultEndedTaskTTL  = time.Hour
	DefaultMaxKeptBytes  = 64 << 20
)

// EndReason says why the door asked its owner to end the session.
type EndReason string

// Reasons Done is closed.
const (
	EndAfterTask   EndReason = "after_task" // lifecycle.after_task: exit and the work is done
	EndStopSession EndReason = "stop_session"
)

// StopResult is murmur.StopSession's result.
type StopResult = doorapi.StopResult

// Server is the door: an http.Handler for the session's listener.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *memStore
	h     *handler     // the A2A methods over the door's tasks
	rpc   http.Handler // a2a-go's JSON-RPC handler over h
	card  []byte

	// baseCtx parents every runner's context; cancelled by Close.
	baseCtx    context.Context
	baseCancel context.CancelFunc

	runners sync.WaitGroup // runner goroutines: Wait waits for them

	now func() time.Time // the clock of the ended-task bounds

	limits limits       // connection bounds (Serve)
	uid    uint32       // the only user whose connections are served
	hs     *http.Server // what Serve serves with

	open, maxOpen atomic.Int64 // connections served now, and at most so far
	closedWaiting atomic.Int64 // connections closed at the cap for waiting with no request
	connMu        sync.Mutex
	waiting       []net.Conn // served connections with no request under way, oldest first

	mu       sync.Mutex
	tasks    map[string]*task
	ended    []*task // ended tasks still kept, in the order they ended
	endBytes int64   // the bytes of the ended tasks kept
	running  *task   // the task whose runner is live (single/queue/none)
	queue    []*task // queue: tasks waiting in SUBMITTED, arrival order
	accepted int     // tasks ever admitted
	closing  bool    // WindDown began: new tasks are rejected
	reason   EndReason
	done     chan struct{}
}

// New makes a door. It fails when the config is incomplete.
func New(cfg Config) (*Server, error) {
	if cfg.Runner == nil {
		return nil, errors.New("door: Config.Runner is required")
	}
	switch cfg.TaskAcceptance {
	case "":
		cfg.TaskAcceptance = AcceptSingle
	case AcceptNone, AcceptSingle, AcceptQueue:
	default:
		return nil, fmt.Errorf("door: task_acceptance %q is not none, single or queue", cfg.TaskAcceptance)
	}
	switch cfg.AfterTask {
	case "":
		cfg.AfterTask = AfterExit
	case AfterExit, AfterSleep:
	default:
		return nil, fmt.Errorf("door: after_task %q is not exit or sleep", cfg.AfterTask)
	}
	if cfg.QueueDepth < 1 {
		cfg.QueueDepth = 1
	}
	if cfg.MaxEndedTasks <= 0 {
		cfg.MaxEndedTasks = DefaultMaxEndedTasks
	}
	if cfg.EndedTaskTTL <= 0 {
		cfg.EndedTaskTTL = DefaultEndedTaskTTL
	}
	if cfg.MaxKeptBytes <= 0 {
		cfg.MaxKeptBytes = DefaultMaxKeptBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		cfg:   cfg,
		log:   cfg.Logger,
		store: newMemStore(),
		tasks: make(map[string]*task),
		done:  make(chan struct{}),
		now:   time.Now,

		limits: defaultLimits(),
		uid:    ownUID(),
	}
	s.hs = s.newHTTPServer()
	s.baseCtx, s.baseCancel = context.WithCancel(context.Background())
	card, err := json.Marshal(s.cardJSON())
	if err != nil {
		return nil, fmt.Errorf("door: agent card: %w", err)
	}
	s.card = card
	s.h = &handler{s: s}
	// a2a-go's call interceptor stack (its call context and logger), as
	// a2asrv.NewHandler puts in front of its own handler.
	s.rpc = a2asrv.NewJSONRPCHandler(&a2asrv.InterceptedHandler{Handler: s.h, Logger: cfg.Logger})
	return s, nil
}

// Done is closed when the session should end: after_task exit and the work
// is done, or murmur.StopSession. The door does not exit the process.
func (s *Server) Done() <-chan struct{} { return s.done }

// EndReason says why Done was closed ("" while it is open).
func (s *Server) EndReason() EndReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Close cancels every runner's context; it does not record cancels (use
// WindDown for that).
func (s *Server) Close() { s.baseCancel() }

// ServeHTTP routes: POST / is JSON-RPC, GET /.well-known/agent-card.json the
// card, everything else 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == strings.TrimSuffix(doorapi.PeerPath, "/") || strings.HasPrefix(r.URL.Path, doorapi.PeerPath):
		if s.cfg.PeerFiles == nil {
			http.NotFound(w, r)
			return
		}
		s.cfg.PeerFiles.ServeHTTP(w, r)
	case r.URL.Path == "/.well-known/agent-card.json" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.card)
	case r.URL.Path == "/" && r.Method == http.MethodPost:
		s.serveRPC(w, r)
	default:
		http.NotFound(w, r)
	}
}

// envelope is a JSON-RPC 2.0 request as read by the front handler.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

var versionRE = regexp.MustCompile(`^1\.0(\.[0-9]+)?$`)

type ctxKey int

const (
	keyOrigin ctxKey = iota
	keyTraceParent
	keySource
	keyCaller
)

func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Authenticate != nil && r.Header.Get(doorapi.HeaderOrigin) != string(OriginCompletion) {
		if ref := s.cfg.Authenticate(r); ref != nil {
			writeRefusal(w, ref)
			return
		}
	}
	caller := ""
	if s.cfg.Auth != nil && r.Header.Get(doorapi.HeaderOrigin) != string(OriginCompletion) {
		c, ref := s.cfg.Auth.check(r)
		if ref != nil {
			writeRefusal(w, ref)
			return
		}
		caller = c
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err == nil {
		// The body is in: lift ReadTimeout's deadline, so a stream or a long
		// blocking SendMessage is not cut when it passes (net/http's
		// background read would otherwise end the request's context). A body
		// that failed keeps it, so the connection is closed.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, nil, &RPCError{Code: doorapi.CodeInvalidRequest, Message: fmt.Sprintf("request body is over %d bytes (4 MiB)", MaxBodyBytes)})
			return
		}
		writeError(w, nil, &RPCError{Code: doorapi.CodeInvalidRequest, Message: "request body could not be read: " + err.Error()})
		return
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		writeError(w, nil, &RPCError{Code: doorapi.CodeParseError, Message: "request body is not JSON: " + err.Error()})
		return
	}
	if !validID(env.ID) {
		writeError(w, nil, &RPCError{Code: doorapi.CodeInvalidRequest, Message: "id must be a string, a number or null"})
		return
	}
	if env.JSONRPC != "2.0" || env.Method == "" {
		writeError(w, env.ID, &RPCError{Code: doorapi.CodeInvalidRequest, Message: `a JSON-RPC 2.0 request needs "jsonrpc": "2.0" and a method`})
		return
	}
	if v := r.Header.Get(doorapi.HeaderVersion); !versionRE.MatchString(v) {
		msg := "the A2A-Version header is missing; this door speaks A2A 1.0"
		if v != "" {
			msg = fmt.Sprintf("A2A-Version %q is not supported; this door speaks A2A 1.0", v)
		}
		writeError(w, env.ID, &RPCError{Code: doorapi.CodeVersionNotSupported, Message: msg, Reason: "VERSION_NOT_SUPPORTED"})
		return
	}
	if caller != "" {
		if ref := s.cfg.Auth.scope(s.cfg.Auth.Realm, env.Method); ref != nil {
			writeRefusal(w, ref)
			return
		}
		// A formation token is served as origin peer, whatever the header says.
		r.Header.Set(doorapi.HeaderOrigin, string(OriginPeer))
	}
	origin, ok := parseOrigin(r.Header.Get(doorapi.HeaderOrigin))
	if !ok {
		writeError(w, env.ID, &RPCError{Code: doorapi.CodeInvalidRequest, Message: fmt.Sprintf("%s %q is not user, delegation, completion or peer", doorapi.HeaderOrigin, r.Header.Get(doorapi.HeaderOrigin))})
		return
	}
	ctx := context.WithValue(r.Context(), keyOrigin, origin)
	ctx = context.WithValue(ctx, keyTraceParent, r.Header.Get(doorapi.HeaderTraceParent))
	ctx = context.WithValue(ctx, keySource, SourceA2A)
	if caller != "" {
		ctx = context.WithValue(ctx, keyCaller, caller)
	}

	// A completion is answered ahead of task_acceptance and the queue.
	if origin == OriginCompletion {
		s.serveCompletion(ctx, w, r, &env)
		return
	}

	switch env.Method {
	case doorapi.MethodStopSession:
		if !emptyParams(env.Params) {
			writeError(w, env.ID, &RPCError{Code: doorapi.CodeInvalidParams, Message: "murmur.StopSession takes no params"})
			return
		}
		res := s.WindDown(ctx)
		writeResult(w, env.ID, res)
		s.end(EndStopSession)
		return
	case "SendMessage", "SendStreamingMessage":
		var req a2a.SendMessageRequest
		if rpcErr := decodeParams(env.Params, &req); rpcErr != nil {
			writeError(w, env.ID, rpcErr)
			return
		}
		if req.Config != nil && req.Config.HistoryLength != nil && *req.Config.HistoryLength < 0 {
			writeError(w, env.ID, negativeHistory(*req.Config.HistoryLength))
			return
		}
	case "GetTask", "CancelTask", "SubscribeToTask":
		var req struct {
			ID            string `json:"id"`
			HistoryLength *int   `json:"historyLength"`
		}
		if rpcErr := decodeParams(env.Params, &req); rpcErr != nil {
			writeError(w, env.ID, rpcErr)
			return
		}
		if req.ID == "" {
			writeError(w, env.ID, &RPCError{Code: doorapi.CodeInvalidParams, Message: env.Method + " needs params.id, the task id"})
			return
		}
		if req.HistoryLength != nil && *req.HistoryLength < 0 {
			writeError(w, env.ID, negativeHistory(*req.HistoryLength))
			return
		}
	case "ListTasks":
		// Every field is optional, so no params is an empty filter.
		if emptyParams(env.Params) {
			env.Params = json.RawMessage("{}")
			b, err := json.Marshal(&env)
			if err != nil {
				writeError(w, env.ID, &RPCError{Code: doorapi.CodeInternal, Message: err.Error()})
				return
			}
			body = b
		}
		var req a2a.ListTasksRequest
		if rpcErr := decodeParams(env.Params, &req); rpcErr != nil {
			writeError(w, env.ID, rpcErr)
			return
		}
		if err := checkListRequest(&req); err != nil {
			writeError(w, env.ID, &RPCError{Code: doorapi.CodeInvalidParams, Message: err.(*a2a.Error).Message})
			return
		}
	case methodGetPushConfig, methodCreatePushConfig, methodListPushConfigs, methodDeletePushConfig,
		methodGetExtendedCard:
		// The request handler answers these: push configs -32003 (the door
		// has no push store or sender), the extended card -32004.
	default:
		writeError(w, env.ID, &RPCError{Code: doorapi.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not served here", env.Method)})
		return
	}
	r2 := r.WithContext(ctx)
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	s.rpc.ServeHTTP(w, r2)
}

func (s *Server) serveCompletion(ctx context.Context, w http.ResponseWriter, r *http.Request, env *envelope) {
	c := &Completion{
		Session:      r.Header.Get(doorapi.HeaderCompletionSession),
		DelegationID: r.Header.Get(doorapi.HeaderDelegationID),
		Method:       env.Method,
		Params:       env.Params,
	}
	if s.cfg.Completions == nil {
		// A completion for another session is misaddressed whatever the
		// session here is; for this one, without a delegation runtime no
		// delegation can be outstanding, so not-awaited is the true answer.
		if c.Session != s.cfg.SessionID {
			writeError(w, env.ID, Misaddressed(c.Session, s.cfg.SessionID))
			return
		}
		writeError(w, env.ID, notAwaited(c.DelegationID))
		return
	}
	res, err := s.cfg.Completions.HandleCompletion(ctx, c)
	if err != nil {
		var rpcErr *RPCError
		if !errors.As(err, &rpcErr) {
			rpcErr = &RPCError{Code: doorapi.CodeInternal, Message: err.Error()}
		}
		writeError(w, env.ID, rpcErr)
		return
	}
	writeResult(w, env.ID, res)
}

// Misaddressed is the -31001 answer to a completion addressed to another
// session than the one running here.
func Misaddressed(addressed, running string) *RPCError {
	return &RPCError{Code: doorapi.CodeCompletionMisaddr, Reason: doorapi.ReasonCompletionMisaddressed, Domain: doorapi.MurmurDomain,
		Message:  fmt.Sprintf("completion is addressed to session %s, which is not the session running here", addressed),
		Metadata: map[string]string{"addressed_session": addressed, "running_session": running}}
}

func notAwaited(dlg string) *RPCError {
	if dlg == "" {
		return &RPCError{Code: doorapi.CodeCompletionNotAwaited, Reason: doorapi.ReasonCompletionNotAwaited, Domain: doorapi.MurmurDomain,
			Message:  "completion names no delegation in x-murmur-delegation-id, so no task in this session is waiting for it",
			Metadata: map[string]string{"delegation_id": ""}}
	}
	return &RPCError{Code: doorapi.CodeCompletionNotAwaited, Reason: doorapi.ReasonCompletionNotAwaited, Domain: doorapi.MurmurDomain,
		Message:  fmt.Sprintf("no task in this session is waiting for delegation %s", dlg),
		Metadata: map[string]string{"delegation_id": dlg}}
}

func negativeHistory(n int) *RPCError {
	return &RPCError{Code: doorapi.CodeInvalidParams, Message: fmt.Sprintf("historyLength %d is negative", n)}
}

func parseOrigin(h string) (Origin, bool) {
	switch Origin(h) {
	case "":
		return OriginUser, true
	case OriginUser, OriginDelegation, OriginCompletion, OriginPeer:
		return Origin(h), true
	}
	return "", false
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch id[0] {
	case '"', 'n':
		return true
	}
	var f float64
	return json.Unmarshal(id, &f) == nil
}

func emptyParams(p json.RawMessage) bool {
	t := bytes.TrimSpace(p)
	switch string(t) {
	case "", "null", "{}", "[]":
		return true
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(t, &m) == nil && len(m) == 0
}

func decodeParams(p json.RawMessage, v any) *RPCError {
	t := bytes.TrimSpace(p)
	if len(t) == 0 || t[0] != '{' {
		return &RPCError{Code: doorapi.CodeInvalidParams, Message: "params must be an object"}
	}
	if err := json.Unmarshal(t, v); err != nil {
		return &RPCError{Code: doorapi.CodeInvalidParams, Message: "params: " + err.Error()}
	}
	return nil
}

var codeReasons = map[int]string{
	doorapi.CodeParseError:           "PARSE_ERROR",
	doorapi.CodeInvalidRequest:       "INVALID_REQUEST",
	doorapi.CodeMethodNotFound:       "METHOD_NOT_FOUND",
	doorapi.CodeInvalidParams:        "INVALID_PARAMS",
	doorapi.CodeInternal:             "INTERNAL_ERROR",
	doorapi.CodeTaskNotFound:         "TASK_NOT_FOUND",
	doorapi.CodeTaskNotCancelable:    "TASK_NOT_CANCELABLE",
	doorapi.CodeUnsupportedOperation: "UNSUPPORTED_OPERATION",
	doorapi.CodeUnsupportedContent:   "CONTENT_TYPE_NOT_SUPPORTED",
	doorapi.CodeVersionNotSupported:  "VERSION_NOT_SUPPORTED",
}

// RPCError is a JSON-RPC error the door writes itself. Reason, when set, is
// sent as a google.rpc.ErrorInfo in Domain (a2a-protocol.org when empty) with
// Metadata.
type RPCError struct {
	Code     int
	Message  string
	Reason   string
	Domain   string
	Metadata map[string]string
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

type wireError struct {
	Code    int                   `json:"code"`
	Message string                `json:"message"`
	Data    []*errordetails.Typed `json:"data,omitempty"`
}

type wireResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *wireError      `json:"error,omitempty"`
}

func writeError(w http.ResponseWriter, id json.RawMessage, e *RPCError) {
	we := &wireError{Code: e.Code, Message: e.Message}
	if e.Reason == "" {
		e.Reason = codeReasons[e.Code]
	}
	if e.Reason != "" {
		domain := e.Domain
		if domain == "" {
			domain = a2a.ProtocolDomain
		}
		we.Data = []*errordetails.Typed{errordetails.NewErrorInfo(e.Reason, domain, e.Metadata)}
	}
	writeJSON(w, wireResponse{JSONRPC: "2.0", ID: nullID(id), Error: we})
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	writeJSON(w, wireResponse{JSONRPC: "2.0", ID: nullID(id), Result: result})
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
