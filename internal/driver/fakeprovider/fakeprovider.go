// Package fakeprovider serves fake model providers on loopback for tests: an
// Anthropic Messages server (POST /v1/messages) and an OpenAI Chat Completions
// server (POST /chat/completions, or /v1/chat/completions), each speaking the
// provider's wire format — JSON bodies, SSE event framing, tool calls streamed
// in pieces, usage blocks, stop reasons — from a queue of scripted replies.
//
// Every request is recorded (headers and body) for assertions. A reply can
// also be a failure: an error status (401, 429 with retry-after, 500, …), a
// body that is not JSON, a stream cut mid-event, or no answer at all until the
// client gives up. Tests of any package may import it; production code never
// does.
package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Protocol is the wire format a Server speaks.
type Protocol int

const (
	Anthropic Protocol = iota + 1 // Anthropic Messages
	OpenAI                        // OpenAI Chat Completions
)

// ToolCall is a tool call the fake model makes; Pieces are the fragments of
// its input JSON as streamed (they concatenate to the input).
type ToolCall struct {
	ID     string
	Name   string
	Pieces []string
}

// Reply is one scripted answer. The zero Stop picks the stop reason from the
// content: a tool call stop when ToolCalls is non-empty, else an end of turn.
type Reply struct {
	Text []string // streamed text deltas, in order (one text block)
	// TextOf, when set, makes Text from the request this reply answers: a
	// model that repeats something it was sent (a tool's result, say).
	TextOf    func(Request) []string
	ToolCalls []ToolCall // after the text
	// Stop is the stop reason in Murmur's words: "end_turn", "tool_call" or
	// "max_tokens"; it is written in the provider's own word on the wire.
	Stop string
	// RawStop, when set, is written on the wire as it is (e.g. "refusal",
	// "content_filter").
	RawStop      string
	InputTokens  int64
	OutputTokens int64
	NoUsage      bool // send no usage block (OpenAI: no usage chunk)

	// Status, when not 0 or 200, answers with this status and the provider's
	// error JSON (Message as its message) instead of a stream.
	Status     int
	Message    string
	RetryAfter string      // the retry-after header, e.g. "0"
	Header     http.Header // extra response headers

	// Malformed answers 200 with an SSE event whose data is not JSON.
	Malformed bool
	// CutAfter > 0 cuts the stream after that many events, in the middle of
	// the next one, by dropping the connection.
	CutAfter int
	// StreamError, when set, sends the provider's in-stream error event with
	// this message after the first event, and ends the stream there (Anthropic:
	// an "error" event such as overloaded_error; OpenAI: a data line holding
	// an "error" object).
	StreamError string
	// HangAfter > 0 sends that many events, then stops sending and holds the
	// connection open until the client gives up (a model stuck mid-answer).
	HangAfter int
	// GateAfter > 0 sends that many events, then waits until Gate is closed
	// (or the client gives up) before sending the rest: a test learns
	// whether the client saw the first events before the stream ended.
	GateAfter int
	Gate      <-chan struct{}
	// Hang never answers: the handler waits until the client gives up (or the
	// server closes).
	Hang bool
	// RedirectTo answers 307 to this URL.
	RedirectTo string
}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the recorded body into a map (nil when it is not a JSON object).
func (r Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}

// Server is a fake provider on loopback.
type Server struct {
	// URL is the base URL to configure as gateway.endpoint: for Anthropic the
	// server's root, for OpenAI the root plus /v1.
	URL   string
	proto Protocol
	srv   *httptest.Server

	mu       sync.Mutex
	queue    []Reply
	requests []Request
	closing  chan struct{}
	once     sync.Once
}

// New starts a fake provider speaking proto. Close it when done.
func New(proto Protocol) *Server {
	s := &Server{proto: proto, closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	if proto == OpenAI {
		s.URL += "/v1"
	}
	return s
}

// NewAnthropic starts a fake Anthropic Messages server.
func NewAnthropic() *Server { return New(Anthropic) }

// NewOpenAI starts a fake OpenAI Chat Completions server.
func NewOpenAI() *Server { return New(OpenAI) }

// Push appends replies to the queue; each request takes the next one. A
// request that finds the queue empty is answered 500 with a message saying so.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pending reports how many scripted replies are left.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Close releases hanging handlers and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.requests = append(s.requests, req)
	if !s.pathOK(r) {
		s.mu.Unlock()
		s.writeError(w, http.StatusNotFound, "fakeprovider: no such endpoint "+r.Method+" "+r.URL.Path)
		return
	}
	var rep Reply
	ok := len(s.queue) > 0
	if ok {
		rep, s.queue = s.queue[0], s.queue[1:]
	}
	s.mu.Unlock()

	if !ok {
		s.writeError(w, http.StatusInternalServerError, "fakeprovider: no scripted reply left")
		return
	}
	if rep.TextOf != nil {
		rep.Text = rep.TextOf(req)
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case rep.Hang:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	case rep.RedirectTo != "":
		http.Redirect(w, r, rep.RedirectTo, http.StatusTemporaryRedirect)
		return
	case rep.Status != 0 && rep.Status != http.StatusOK:
		if rep.RetryAfter != "" {
			w.Header().Set("retry-after", rep.RetryAfter)
		}
		msg := rep.Message
		if msg == "" {
			msg = http.StatusText(rep.Status)
		}
		s.writeError(w, rep.Status, msg)
		return
	}

	var events []event
	if s.proto == Anthropic {
		events = anthropicEvents(rep, model(body))
	} else {
		events = openaiEvents(rep, model(body))
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if rep.StreamError != "" {
		events = append(events[:1:1], s.errorEvent(rep.StreamError))
	}
	for i, ev := range events {
		if rep.HangAfter > 0 && i == rep.HangAfter {
			select {
			case <-r.Context().Done():
			case <-s.closing:
			}
			return
		}
		if rep.GateAfter > 0 && i == rep.GateAfter {
			select {
			case <-rep.Gate:
			case <-r.Context().Done():
				return
			case <-s.closing:
				return
			}
		}
		if rep.CutAfter > 0 && i == rep.CutAfter {
			// Half an event, then the connection drops: the client sees the
			// body end without the chunked terminator.
			frame := ev.frame()
			_, _ = w.Write(frame[:len(frame)/2])
			if fl != nil {
				fl.Flush()
			}
			panic(http.ErrAbortHandler)
		}
		_, _ = w.Write(ev.frame())
		if fl != nil {
			fl.Flush()
		}
	}
}

func (s *Server) pathOK(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	if s.proto == Anthropic {
		return r.URL.Path == "/v1/messages"
	}
	return r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/chat/completions"
}

func (s *Server) errorEvent(msg string) event {
	if s.proto == Anthropic {
		return event{Name: "error", Data: mustJSON(map[string]any{
			"type": "error", "error": map[string]any{"type": "overloaded_error", "message": msg},
		})}
	}
	return event{Data: mustJSON(map[string]any{"error": map[string]any{
		"message": msg, "type": "server_error", "param": nil, "code": nil,
	}})}
}

// writeError answers with the provider's error body.
func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	var body any
	if s.proto == Anthropic {
		body = map[string]any{
			"type":       "error",
			"error":      map[string]any{"type": anthropicErrorType(status), "message": msg},
			"request_id": "req_fake",
		}
		w.Header().Set("request-id", "req_fake")
	} else {
		code := any(nil)
		if status == http.StatusUnauthorized {
			code = "invalid_api_key"
		}
		body = map[string]any{"error": map[string]any{
			"message": msg, "type": openaiErrorType(status), "param": nil, "code": code,
		}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func openaiErrorType(status int) string {
	switch {
	case status == 401 || status == 400 || status == 404:
		return "invalid_request_error"
	case status == 429:
		return "requests"
	default:
		return "server_error"
	}
}

// event is one SSE event: Name is the event: line (empty for none), Data the
// data: line.
type event struct {
	Name string
	Data string
}

func (e event) frame() []byte {
	var b bytes.Buffer
	if e.Name != "" {
		fmt.Fprintf(&b, "event: %s\n", e.Name)
	}
	for _, line := range strings.Split(e.Data, "\n") {
		fmt.Fprintf(&b, "data: %s\n", line)
	}
	b.WriteString("\n")
	return b.Bytes()
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// model echoes the request's model back, as the providers do.
func model(body []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Model
}

func stopOf(rep Reply) string {
	if rep.Stop != "" {
		return rep.Stop
	}
	if len(rep.ToolCalls) > 0 {
		return "tool_call"
	}
	return "end_turn"
}

// Key returns the API key a request carried: the x-api-key header, or the
// bearer token of Authorization.
func Key(r Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}
