package door

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// CompletionsOnly is the handler of a script parent's completion listener
// (docs/delegation.md): a script has no door, so its runtime
// serves the completion path alone. It answers a POST / that is a
// completion exactly as a door does — ahead of everything, with h's result
// or its -31001/-31002 error — and refuses every other request with
// -32601, naming what it is. Nothing it answers is recorded.
func CompletionsOnly(h CompletionHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			writeError(w, nil, &RPCError{Code: doorapi.CodeInvalidRequest, Message: "request body could not be read: " + err.Error()})
			return
		}
		var env envelope
		if err := json.Unmarshal(body, &env); err != nil || !validID(env.ID) {
			writeError(w, nil, &RPCError{Code: doorapi.CodeParseError, Message: "request body is not a JSON-RPC request"})
			return
		}
		if o, _ := parseOrigin(r.Header.Get(doorapi.HeaderOrigin)); o != OriginCompletion {
			writeError(w, env.ID, &RPCError{Code: doorapi.CodeMethodNotFound,
				Message: fmt.Sprintf("this is a script capsule's completion listener: it answers only %s: completion", doorapi.HeaderOrigin)})
			return
		}
		c := &Completion{Session: r.Header.Get(doorapi.HeaderCompletionSession), DelegationID: r.Header.Get(doorapi.HeaderDelegationID),
			Method: env.Method, Params: env.Params}
		res, err := h.HandleCompletion(r.Context(), c)
		if err != nil {
			var rpcErr *RPCError
			if !errors.As(err, &rpcErr) {
				rpcErr = &RPCError{Code: doorapi.CodeInternal, Message: err.Error()}
			}
			writeError(w, env.ID, rpcErr)
			return
		}
		writeResult(w, env.ID, res)
	})
}

// NewCompletionServer serves the completion path alone (CompletionsOnly(h))
// under the door's connection rules: the same-user rule, the timeouts and
// the connection cap of Serve. A script parent, which has no door, answers
// its children's completions with it, so another local user can post none.
func NewCompletionServer(h CompletionHandler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{log: log, limits: defaultLimits(), uid: ownUID(), done: make(chan struct{})}
	s.hs = s.newHTTPServer()
	s.hs.Handler = CompletionsOnly(h)
	return s
}
