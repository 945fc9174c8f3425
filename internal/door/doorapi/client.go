package doorapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// maxAnswerBytes bounds what the client reads of an answer to murmur's own
// calls: a completion receipt or a StopSession result is well under it.
const maxAnswerBytes = 1 << 20

// Client calls one door. It is safe for concurrent use when HTTPClient is.
//
// A2A's own call (SendTask) goes through a2a-go's client. The door answers a
// completion and murmur.StopSession with murmur's results and codes, which
// a2a-go's client would not decode (it reads a SendMessage result as a task
// or a message, and any code outside A2A's as -32603), so those two are sent
// by the Client's own JSON-RPC call, with the same headers.
type Client struct {
	// URL is the door's JSON-RPC endpoint, e.g. "http://127.0.0.1:41234/".
	URL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Token, when set, is presented as Authorization: Bearer on every call
	// (a door with network.authentication: its operator token, or a
	// formation token for a callee's door).
	Token string
}

// NewClient returns a Client for the door at url ("http://host:port/").
func NewClient(url string, hc *http.Client) *Client { return &Client{URL: url, HTTPClient: hc} }

func (c *Client) http() *http.Client {
	if c.HTTPClient == nil {
		return http.DefaultClient
	}
	return c.HTTPClient
}

// Task is one SendTask: the message and the headers that go with it.
type Task struct {
	Message *a2a.Message
	// Origin is sent as HeaderOrigin; "" sends no header, which the door
	// reads as OriginUser.
	Origin Origin
	// TraceParent, when set, is sent as HeaderTraceParent.
	TraceParent string
	// ReturnImmediately asks for the task as soon as it is accepted,
	// rather than when it ends.
	ReturnImmediately bool
}

// SendTask sends A2A SendMessage through a2a-go's client and returns the
// door's answer: a task, or a message when the exchange is finished. A
// JSON-RPC error is a2a-go's *a2a.Error (CodeOf gives its code); a door's
// HTTP refusal (an authenticated door's 401 or 403) is a *RefusalError;
// anything else failed before an answer was read.
func (c *Client) SendTask(ctx context.Context, t Task) (a2a.SendMessageResult, error) {
	hc := *c.http()
	rc := &refusalCatcher{base: hc.Transport}
	if rc.base == nil {
		rc.base = http.DefaultTransport
	}
	hc.Transport = rc
	client, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{a2a.NewAgentInterface(c.URL, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&hc))
	if err != nil {
		return nil, err
	}
	defer client.Destroy()
	params := a2aclient.ServiceParams{}
	if t.Origin != "" {
		params.Append(HeaderOrigin, string(t.Origin))
	}
	if t.TraceParent != "" {
		params.Append(HeaderTraceParent, t.TraceParent)
	}
	if c.Token != "" {
		params.Append("Authorization", "Bearer "+c.Token)
	}
	req := &a2a.SendMessageRequest{Message: t.Message}
	if t.ReturnImmediately {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	res, err := client.SendMessage(a2aclient.AttachServiceParams(ctx, params), req)
	if err != nil && rc.got != nil {
		return nil, rc.got
	}
	return res, err
}

// PostCompletion posts a child's completion to its parent's door: a
// SendMessage whose one text part is the completion as JSON, with
// HeaderOrigin: completion and the addressee's session and delegation. A
// door's refusal is an *Error: errors.Is(err, ErrCompletionMisaddressed) or
// ErrCompletionNotAwaited tells the two completion codes apart.
func (c *Client) PostCompletion(ctx context.Context, to Addressee, messageID string, comp Completion) (CompletionReceipt, error) {
	text, err := json.Marshal(comp)
	if err != nil {
		return CompletionReceipt{}, err
	}
	msg := &a2a.Message{ID: messageID, Role: a2a.MessageRoleUser, ContextID: to.ContextID,
		Parts: a2a.ContentParts{a2a.NewTextPart(string(text))}}
	h := http.Header{}
	h.Set(HeaderOrigin, string(OriginCompletion))
	h.Set(HeaderDelegationID, to.DelegationID)
	h.Set(HeaderCompletionSession, to.SessionID)
	res, err := c.call(ctx, MethodSendMessage, &a2a.SendMessageRequest{Message: msg}, h, false)
	if err != nil {
		return CompletionReceipt{}, err
	}
	// Any result is the door's yes; the receipt is read for what it says.
	var out CompletionReceipt
	_ = json.Unmarshal(res, &out)
	return out, nil
}

// StopSession calls murmur.StopSession: the door cancels its live and
// queued tasks and the session winds down.
func (c *Client) StopSession(ctx context.Context) (StopResult, error) {
	res, err := c.call(ctx, MethodStopSession, nil, nil, true)
	if err != nil {
		return StopResult{}, err
	}
	var out StopResult
	if err := json.Unmarshal(res, &out); err != nil {
		return StopResult{}, fmt.Errorf("%s: the result does not decode: %w", MethodStopSession, err)
	}
	return out, nil
}

// rpcRequest is a JSON-RPC 2.0 request; Params is left out when nil.
type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// call sends one JSON-RPC request and returns its result as sent. An answer
// with no result is nil, or a *BadAnswerError when needResult.
func (c *Client) call(ctx context.Context, method string, params any, h http.Header, needResult bool) (json.RawMessage, error) {
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: 1, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s: encode the request: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderVersion, Version)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, &BadAnswerError{StatusCode: resp.StatusCode, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if ref := refusalOf(resp.StatusCode, raw); ref != nil {
		return nil, ref
	}
	var ans struct {
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, &BadAnswerError{StatusCode: resp.StatusCode, Err: err}
	}
	if ans.Error != nil {
		return nil, ans.Error
	}
	if string(bytes.TrimSpace(ans.Result)) == "null" {
		ans.Result = nil
	}
	if ans.Result == nil && needResult {
		return nil, &BadAnswerError{StatusCode: resp.StatusCode, NoResult: true}
	}
	return ans.Result, nil
}

// Error is a door's JSON-RPC error answer, as it was sent.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Is matches the completion codes' sentinels.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrCompletionMisaddressed:
		return e.Code == CodeCompletionMisaddr
	case ErrCompletionNotAwaited:
		return e.Code == CodeCompletionNotAwaited
	}
	return false
}

// The completion codes as errors, for errors.Is on what PostCompletion
// returns.
var (
	ErrCompletionMisaddressed = errors.New("COMPLETION_MISADDRESSED (-31001)")
	ErrCompletionNotAwaited   = errors.New("COMPLETION_NOT_AWAITED (-31002)")
)

// BadAnswerError is an HTTP answer that is not a JSON-RPC answer with a
// result or an error: what answered is probably not a door.
type BadAnswerError struct {
	StatusCode int
	// NoResult: the body was JSON-RPC, with neither result nor error.
	NoResult bool
	Err      error
}

func (e *BadAnswerError) Error() string {
	if e.NoResult {
		return fmt.Sprintf("HTTP %d, a JSON-RPC answer with no result", e.StatusCode)
	}
	return fmt.Sprintf("HTTP %d, not a JSON-RPC answer: %v", e.StatusCode, e.Err)
}

func (e *BadAnswerError) Unwrap() error { return e.Err }

// a2aCodes are the codes a2a-go's client turns into its error values.
var a2aCodes = []struct {
	err  error
	code int
}{
	{a2a.ErrParseError, CodeParseError},
	{a2a.ErrInvalidRequest, CodeInvalidRequest},
	{a2a.ErrMethodNotFound, CodeMethodNotFound},
	{a2a.ErrInvalidParams, CodeInvalidParams},
	{a2a.ErrTaskNotFound, CodeTaskNotFound},
	{a2a.ErrTaskNotCancelable, CodeTaskNotCancelable},
	{a2a.ErrPushNotificationNotSupported, CodePushNotSupported},
	{a2a.ErrUnsupportedOperation, CodeUnsupportedOperation},
	{a2a.ErrUnsupportedContentType, CodeUnsupportedContent},
	{a2a.ErrVersionNotSupported, CodeVersionNotSupported},
	{a2a.ErrInternalError, CodeInternal},
}

// CodeOf returns the JSON-RPC code of a door's error answer, and false for
// an error that is not one (the request failed before an answer was read).
// a2a-go reads a code outside A2A's list as -32603.
func CodeOf(err error) (int, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	var ae *a2a.Error
	if !errors.As(err, &ae) {
		return 0, false
	}
	for _, c := range a2aCodes {
		if errors.Is(ae, c.err) {
			return c.code, true
		}
	}
	return CodeInternal, true
}

// Endpoint is the JSON-RPC endpoint of a door whose address is addr: a
// running record's bare "127.0.0.1:PORT", or a URL with its scheme.
func Endpoint(addr string) string {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	if !strings.HasSuffix(addr, "/") {
		addr += "/"
	}
	return addr
}

// GetTask reads a task by id with A2A GetTask ({"id", "historyLength": 0}):
// the raw task object, for a caller that waits on another session's task
// (a plan's capsule step reading its sub-capsule's answer).
func (c *Client) GetTask(ctx context.Context, id string) (json.RawMessage, error) {
	return c.call(ctx, "GetTask", map[string]any{"id": id, "historyLength": 0}, nil, true)
}

// CancelTask asks the door to cancel the task id (A2A CancelTask); the
// task's answer is not read beyond its being one.
func (c *Client) CancelTask(ctx context.Context, id string) error {
	_, err := c.call(ctx, "CancelTask", map[string]any{"id": id}, nil, false)
	return err
}

// CardSessionID reads the door's agent card (GET
// /.well-known/agent-card.json, no token: a card is public) and returns
// the sessionId of its capsule extension ("" when it has none). A launcher
// probes a member's door with it: the door answers as that session.
func (c *Client) CardSessionID(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.URL, "/")+"/.well-known/agent-card.json", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the agent card answered HTTP %d", resp.StatusCode)
	}
	var card struct {
		Capabilities struct {
			Extensions []struct {
				URI    string `json:"uri"`
				Params struct {
					SessionID string `json:"sessionId"`
				} `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&card); err != nil {
		return "", fmt.Errorf("the agent card does not parse: %w", err)
	}
	for _, e := range card.Capabilities.Extensions {
		if e.Params.SessionID != "" {
			return e.Params.SessionID, nil
		}
	}
	return "", nil
}
