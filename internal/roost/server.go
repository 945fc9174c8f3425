package roost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// Request headers and the body bound, as the wire package names them.
const (
	HeaderCredential = roostapi.HeaderCredential
	HeaderApproval   = roostapi.HeaderApproval
	MaxBodyBytes     = roostapi.MaxBodyBytes
)

// Server is mur-roost's HTTP layer over a Referee: each endpoint decodes its
// body and headers, calls one referee method and encodes the answer. It holds
// no state of its own.
type Server struct {
	ref *Referee
}

// New builds the referee (taking the start-up census of opts.RunningDir, see
// NewReferee) and the HTTP layer over it.
func New(opts Options) (*Server, StartupCount, error) {
	ref, cnt, err := NewReferee(opts)
	if err != nil {
		return nil, cnt, err
	}
	return &Server{ref: ref}, cnt, nil
}

// Referee is the logic under the handler.
func (s *Server) Referee() *Referee { return s.ref }

// Close releases the referee's start-up census handles.
func (s *Server) Close() { s.ref.Close() }

// Snapshot reads the referee's census exactly as a request would.
func (s *Server) Snapshot() Snapshot { return s.ref.Snapshot() }

// ServeHTTP routes the five endpoints. Anything else is a JSON 404 or 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == roostapi.PathHealth:
		if method(w, r, http.MethodGet) {
			writeRaw(w, http.StatusOK, []byte("{}"))
		}
	case p == roostapi.PathSpawn:
		if method(w, r, http.MethodPost) {
			s.spawn(w, r)
		}
	case p == roostapi.PathRegister:
		if method(w, r, http.MethodPost) {
			s.register(w, r)
		}
	case p == roostapi.PathDeregister:
		if method(w, r, http.MethodPost) {
			s.deregister(w, r)
		}
	case strings.HasPrefix(p, roostapi.PathStatus):
		if method(w, r, http.MethodGet) {
			resp, err := s.ref.Status(strings.TrimPrefix(p, roostapi.PathStatus))
			respond(w, resp, err)
		}
	default:
		writeError(w, http.StatusNotFound, msgNotFound)
	}
}

func method(w http.ResponseWriter, r *http.Request, want string) bool {
	if r.Method == want || (want == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", want)
	writeError(w, http.StatusMethodNotAllowed, msgMethodNotAllowed)
	return false
}

func (s *Server) spawn(w http.ResponseWriter, r *http.Request) {
	var req roostapi.SpawnRequest
	if err := readJSON(w, r, bodyField{"name", &req.Name}, bodyField{"version", &req.Version}); err != nil {
		refuse(w, err)
		return
	}
	resp, err := s.ref.Spawn(token(r.Header, HeaderCredential), req)
	respond(w, resp, err)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req roostapi.RegisterRequest
	if err := readJSON(w, r, bodyField{"session_id", &req.SessionID}, bodyField{"name", &req.Name}, bodyField{"version", &req.Version}); err != nil {
		refuse(w, err)
		return
	}
	// A present approval header selects the approval path, whatever it
	// holds; a credential header here is not looked at.
	var resp roostapi.RegisterResponse
	var err error
	peer := noPeer
	if s.ref.runningDir != "" {
		peer = requestPeer(r)
	}
	if _, withApproval := r.Header[HeaderApproval]; withApproval {
		resp, err = s.ref.RegisterApproved(req, token(r.Header, HeaderApproval), peer)
	} else {
		resp, err = s.ref.RegisterTopLevel(req, peer)
	}
	respond(w, resp, err)
}

func (s *Server) deregister(w http.ResponseWriter, r *http.Request) {
	var req roostapi.DeregisterRequest
	if err := readJSON(w, r, bodyField{"outcome", &req.Outcome}); err != nil {
		refuse(w, err)
		return
	}
	respond(w, struct{}{}, s.ref.Deregister(token(r.Header, HeaderCredential), req))
}

// token is the header's one value. Absent or given twice it is "", which
// never verifies: a header given twice names no one token.
func token(h http.Header, name string) string {
	if v := h[name]; len(v) == 1 {
		return v[0]
	}
	return ""
}

// ---- bodies ------------------------------------------------------------------

// bodyField is one string field of a request body and where it goes.
type bodyField struct {
	key string
	dst *string
}

// readJSON reads a body of at most MaxBodyBytes, decodes one JSON object and
// fills each string field named in fields (exact key match: encoding/json's
// case-insensitive matching would take "NAME" for "name", and the text says
// extra keys are ignored). A null field is a missing one. Any failure is a
// 400 refusal. The fields are a list, not a map, so a request builds none.
func readJSON(w http.ResponseWriter, r *http.Request, fields ...bodyField) error {
	buf := bodyPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 4<<10 {
			buf.Reset()
			bodyPool.Put(buf)
		}
	}()
	buf.Reset()
	// A body whose Content-Length is within the bound cannot exceed it
	// (net/http stops reading at the length), so only a longer or a chunked
	// one needs MaxBytesReader's refusal and its closing of the connection.
	var src io.Reader = r.Body
	if r.ContentLength < 0 || r.ContentLength > MaxBodyBytes {
		src = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	}
	_, err := buf.ReadFrom(src)
	body := buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return badRequest(msgBodyTooLarge(MaxBodyBytes))
		}
		return badRequest(msgBodyUnreadable)
	}
	if parseFlatFields(body, fields) {
		return nil
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return badRequest(msgBodyNotObject)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return badRequest(msgBodyInvalid(jsonProblem(err)))
	}
	for _, f := range fields {
		raw, ok := obj[f.key]
		if !ok || string(raw) == "null" {
			continue
		}
		var v string // decoded here, so the destinations never reach encoding/json (and the heap)
		if err := json.Unmarshal(raw, &v); err != nil {
			// A copy of the key: the key reaching fmt would, to escape
			// analysis, take every field's destination to the heap with it.
			return badRequest(msgFieldNotString(string([]byte(f.key))))
		}
		*f.dst = v
	}
	return nil
}

// bodyPool holds request-body buffers: a request body is a few hundred bytes.
var bodyPool = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 512)) }}

// jsonProblem words a decoding error without echoing the body back.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s must be a %s", te.Field, te.Type.String())
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	return "it does not decode"
}

// ---- responses ---------------------------------------------------------------

// answer is what a referee answers with besides a refusal.
type answer interface {
	roostapi.StatusResponse | roostapi.SpawnResponse | roostapi.RegisterResponse | struct{}
}

// respond writes a referee's answer: a refusal as {"error": "..."} with its
// status, anything else as a 200 JSON body. It is generic so that an answer
// is not boxed on the heap on its way to the encoder.
func respond[T answer](w http.ResponseWriter, v T, err error) {
	if err != nil {
		refuse(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// refuse writes a refusal as {"error": "..."} with its status.
func refuse(w http.ResponseWriter, err error) {
	re, ok := err.(*roostapi.Error) // the referee's own refusals, unwrapped
	if !ok {
		re = asRefusal(err)
	}
	writeError(w, re.StatusCode, re.Message)
}

func asRefusal(err error) *roostapi.Error {
	var re *roostapi.Error
	if !errors.As(err, &re) {
		// The referee refuses only with *roostapi.Error; anything else
		// is a bug, answered as one rather than as a guess.
		re = &roostapi.Error{StatusCode: http.StatusInternalServerError, Message: err.Error()}
	}
	return re
}

// Header values every answer carries, shared read-only (net/http only reads
// a handler's header values).
var (
	hdrJSON    = []string{"application/json"}
	hdrNoStore = []string{"no-store"}
)

func writeRaw(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrNoStore
	w.WriteHeader(code)
	w.Write(body)
}

func writeJSON[T answer](w http.ResponseWriter, code int, v T) {
	sb := getScratch()
	b, ok := appendAnswer((*sb)[:0], any(v))
	if ok {
		writeRaw(w, code, b) // the ResponseWriter copies it
	}
	putScratch(sb, b)
	if ok {
		return
	}
	writeJSONSlow(w, code, v)
}

// writeJSONSlow encodes an answer that is not plain through encoding/json.
func writeJSONSlow(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	writeRaw(w, code, bytes.TrimRight(buf.Bytes(), "\n"))
}

// writeError answers {"error": "<message>"}.
func writeError(w http.ResponseWriter, code int, msg string) {
	sb := getScratch()
	b, ok := appendError((*sb)[:0], msg)
	if ok {
		writeRaw(w, code, b)
	}
	putScratch(sb, b)
	if ok {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(msg)
	body := make([]byte, 0, buf.Len()+12)
	body = append(body, `{"error": `...)
	body = append(body, bytes.TrimRight(buf.Bytes(), "\n")...)
	body = append(body, '}')
	writeRaw(w, code, body)
}
