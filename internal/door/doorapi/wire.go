// Package doorapi is an agent capsule's door as seen from the wire: the
// header names and their values, murmur's own JSON-RPC method and error
// codes, the completion a child posts and the record it keeps of it, and one
// typed client (docs/door.md, docs/delegation.md).
//
// The door (internal/door) reads requests with these names and every caller
// of a door sends them through Client: the delegation runtime delivering a
// child its task and a child posting its completion, mur stop asking a
// session to wind down, and murmur:message/send reaching a peer. A header
// renamed here is renamed on both sides at once.
//
// A door with network.authentication takes a bearer token: its operator
// token (token.go) or a formation token. Client presents Token; nothing here
// logs it.
package doorapi

// Request headers. HTTP header names are case-insensitive; these are the
// spellings the door's documents use.
const (
	// HeaderVersion carries the A2A protocol version; the door serves 1.0.
	HeaderVersion = "A2A-Version"
	// HeaderOrigin says who sent a task (an Origin); absent is OriginUser.
	HeaderOrigin = "x-murmur-task-origin"
	// HeaderTraceParent is the W3C trace context a delegated task carries.
	HeaderTraceParent = "traceparent"
	// HeaderCompletionSession names the session a completion is addressed to.
	HeaderCompletionSession = "x-murmur-completion-session"
	// HeaderDelegationID names the delegation a completion reports.
	HeaderDelegationID = "x-murmur-delegation-id"
)

// Version is the A2A-Version a door serves and a Client sends.
const Version = "1.0"

// Origin says who sent a task, from HeaderOrigin. It is passed to the task
// unchanged.
type Origin string

// The origins a request may carry; a request without the header is OriginUser.
const (
	OriginUser       Origin = "user"
	OriginDelegation Origin = "delegation"
	OriginCompletion Origin = "completion"
	OriginPeer       Origin = "peer"
)

// JSON-RPC methods a Client calls by name.
const (
	// MethodSendMessage is A2A's SendMessage, which also carries a
	// completion (with HeaderOrigin: completion).
	MethodSendMessage = "SendMessage"
	// MethodStopSession is murmur's own method: every live and queued task
	// ends canceled and the session winds down.
	MethodStopSession = "murmur.StopSession"
)

// JSON-RPC and A2A error codes a door answers, and murmur's two completion
// codes.
const (
	CodeParseError           = -32700
	CodeInvalidRequest       = -32600
	CodeMethodNotFound       = -32601
	CodeInvalidParams        = -32602
	CodeInternal             = -32603
	CodeTaskNotFound         = -32001
	CodeTaskNotCancelable    = -32002
	CodePushNotSupported     = -32003
	CodeUnsupportedOperation = -32004
	CodeUnsupportedContent   = -32005
	CodeVersionNotSupported  = -32009
	// CodeCompletionMisaddr: the completion names another session than the
	// one running at that door.
	CodeCompletionMisaddr = -31001
	// CodeCompletionNotAwaited: no task in the session waits for the
	// delegation the completion names.
	CodeCompletionNotAwaited = -31002
)

// MurmurDomain is the google.rpc.ErrorInfo domain of murmur's own errors.
const MurmurDomain = "murmur.nexus"

// The ErrorInfo reasons of the two completion codes.
const (
	ReasonCompletionMisaddressed = "COMPLETION_MISADDRESSED"
	ReasonCompletionNotAwaited   = "COMPLETION_NOT_AWAITED"
)

// StopResult is murmur.StopSession's result: the tasks it canceled and the
// delegations their ending terminated.
type StopResult struct {
	SessionID  string   `json:"session_id"`
	Canceled   []string `json:"canceled"`
	Terminated []string `json:"terminated"`
}

// Completion statuses: a completion's status, and the delegation line's
// outcome for a delegation that started.
const (
	StatusOK         = "ok"
	StatusError      = "error"
	StatusCrashed    = "crashed"
	StatusTerminated = "terminated"
)

// Completion is what a child reports to its parent's door when its session
// ends: the text of the completion's one message part, as JSON.
type Completion struct {
	DelegationID   string `json:"delegation_id"`
	CapsuleName    string `json:"capsule_name"` // the full name
	CapsuleVersion string `json:"capsule_version"`
	SessionID      string `json:"session_id"`
	Status         string `json:"status"`
	ResultPath     string `json:"result_path,omitempty"`
	Workdir        string `json:"workdir"`
	DurationMS     int64  `json:"duration_ms"`
	Detail         string `json:"detail,omitempty"`
}

// CompletionRecord is completion.json in the child's records dir: the
// completion and the three fields that describe its delivery. Whoever
// reported it (the child, or its launcher when the child could not) writes
// it; the parent reads it.
type CompletionRecord struct {
	Completion

	ReportedBy    string `json:"reported_by"` // child | launcher
	Delivered     bool   `json:"delivered"`
	DeliveryError string `json:"delivery_error,omitempty"`
}

// CompletionReceipt is a door's result for a completion it was waiting for.
type CompletionReceipt struct {
	DelegationID string `json:"delegation_id"`
	Received     bool   `json:"received"`
}

// Addressee is where a completion goes: the parent's door and what the
// parent gave the child to name the delegation by (the MURMUR_SPAWNER
// handle's fields).
type Addressee struct {
	SessionID    string // the parent's session
	ContextID    string // the delegating task's context
	DelegationID string
}
