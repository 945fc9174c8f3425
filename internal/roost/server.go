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
	"time"

	"github.com/murmur-go/murmur/internal/envelope"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Request headers (roost-and-delegation.txt "Endpoints").
const (
	HeaderCredential = "X-Murmur-Spawn-Credential"
	HeaderApproval   = "X-Murmur-Spawn-Approval"
)

// MaxBodyBytes caps every request body; a larger one is a 400 (contracts §7).
const MaxBodyBytes = 64 << 10

// Options configure a Server.
type Options struct {
	MaxDepth        int
	MaxConcurrent   int
	MaxLiveCapsules int
	SpawnAllow      []string
	Registry        Registry
	// RunningDir is the running-capsule directory the start-up census reads
	// (home.Running(home)); "" counts nothing.
	RunningDir string
}

// Server is the mur-roost HTTP handler and everything it keeps in memory.
type Server struct {
	maxDepth, maxConcurrent, maxLive int
	spawnAllow                       map[string]struct{}
	reg                              Registry
	cred, appr                       *minter

	// now is the clock approvals expire by; tests move it forward.
	now func() time.Time

	mu sync.Mutex
	st *state
}

// New takes the start-up census of opts.RunningDir and returns the server.
// It fails, with the path and the OS's words, when that directory exists and
// cannot be listed. Nothing is written anywhere.
func New(opts Options) (*Server, StartupCount, error) {
	var set *startupSet
	var cnt StartupCount
	if opts.RunningDir != "" {
		var err error
		set, cnt, err = scanStartup(opts.RunningDir)
		if err != nil {
			return nil, cnt, err
		}
	}
	cred, err := newMinter(credentialPrefix)
	if err != nil {
		set.close()
		return nil, cnt, fmt.Errorf("mint the credential key: %w", err)
	}
	appr, err := newMinter(approvalPrefix)
	if err != nil {
		set.close()
		return nil, cnt, fmt.Errorf("mint the approval key: %w", err)
	}
	s := &Server{
		maxDepth:      opts.MaxDepth,
		maxConcurrent: opts.MaxConcurrent,
		maxLive:       opts.MaxLiveCapsules,
		spawnAllow:    map[string]struct{}{},
		reg:           opts.Registry,
		cred:          cred,
		appr:          appr,
		st:            newState(set),
		now:           time.Now,
	}
	for _, n := range opts.SpawnAllow {
		s.spawnAllow[n] = struct{}{}
	}
	return s, cnt, nil
}

// Close releases the start-up census's process handles.
func (s *Server) Close() {
	s.mu.Lock()
	s.st.startup.close()
	s.mu.Unlock()
}

// ServeHTTP routes the five endpoints. Anything else is a JSON 404 or 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/health":
		if !method(w, r, http.MethodGet) {
			return
		}
		writeRaw(w, http.StatusOK, []byte("{}"))
	case p == "/spawn":
		if method(w, r, http.MethodPost) {
			s.spawn(w, r)
		}
	case p == "/register":
		if method(w, r, http.MethodPost) {
			s.register(w, r)
		}
	case p == "/deregister":
		if method(w, r, http.MethodPost) {
			s.deregister(w, r)
		}
	case strings.HasPrefix(p, "/status/"):
		if method(w, r, http.MethodGet) {
			s.status(w, r, strings.TrimPrefix(p, "/status/"))
		}
	default:
		writeError(w, http.StatusNotFound, "not found")
	}
}

func method(w http.ResponseWriter, r *http.Request, want string) bool {
	if r.Method == want || (want == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", want)
	writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	return false
}

// ---- POST /spawn -----------------------------------------------------------

type spawnRequest struct{ Name, Version string }

type spawnResponse struct {
	Approval    string `json:"approval"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	SHA256      string `json:"sha256"`
	ExpiresAtMS int64  `json:"expires_at_ms"`
}

// spawn: body (400) → credential (identity 403) → name in the session's
// allow list (403) → depth → machine ceiling → concurrency (403 each) →
// resolve the child (500) → envelope (403) → grant (contracts §7).
func (s *Server) spawn(w http.ResponseWriter, r *http.Request) {
	var req spawnRequest
	if !readJSON(w, r, map[string]*string{"name": &req.Name, "version": &req.Version}) {
		return
	}
	if msg := checkNameVersion(req.Name, req.Version); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	sid, ok := s.credentialSession(r)
	if !ok {
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}

	s.mu.Lock()
	s.st.sweep(s.now())
	parent := s.st.sessions[sid]
	if parent == nil || parent.status != statusRunning {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}
	if _, ok := parent.allow[req.Name]; !ok {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgNotInParentAllow(req.Name))
		return
	}
	if msg := s.bounds(parent); msg != "" {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msg)
		return
	}
	parentManifest := parent.manifest
	s.mu.Unlock()

	// The registry is read outside the lock: hashing an artifact must not
	// hold up every other session's requests.
	art, err := s.reg.Resolve(req.Name, req.Version)
	if err != nil {
		writeError(w, http.StatusInternalServerError, resolveFailure(req.Name, req.Version, err))
		return
	}
	if ref := envelope.Check(parentManifest, art.Manifest); ref != nil {
		writeError(w, http.StatusForbidden, ref.Error())
		return
	}

	// Grant: the bounds are asked again together with the reservation, in
	// one critical section, because other requests ran while the registry
	// was read. Without this two concurrent spawns could both pass the first
	// check and together exceed --max-concurrent or the ceiling. The clock is
	// read under the lock, so the queue's grant order is its deadline order.
	s.mu.Lock()
	now := s.now()
	s.st.sweep(now)
	if parent.status != statusRunning {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}
	if msg := s.bounds(parent); msg != "" {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msg)
		return
	}
	a := &approval{
		nonce:    newNonce(),
		parent:   parent,
		name:     art.Name,
		version:  art.Version,
		sha256:   art.SHA256,
		depth:    parent.depth - 1,
		deadline: now.Add(approvalLifetime),
		state:    apPending,
	}
	s.st.approvals[a.nonce] = a
	s.st.queue = append(s.st.queue, a)
	parent.pending[a] = struct{}{}
	s.st.pending++
	s.mu.Unlock()

	expires := now.Add(approvalLifetime).UnixMilli()
	tok, err := s.appr.mint(approvalPayload{
		V: 1, S: parent.id, Name: a.name, Version: a.version, SHA256: a.sha256,
		Depth: a.depth, Expires: expires, Nonce: a.nonce,
	})
	if err != nil { // json.Marshal of strings and ints cannot fail
		panic(err)
	}
	writeJSON(w, http.StatusOK, spawnResponse{
		Approval: tok, Name: a.name, Version: a.version, SHA256: a.sha256, ExpiresAtMS: expires,
	})
}

// bounds asks depth, then the machine ceiling, then concurrency, and returns
// the first refusal, or "". Called with the lock held, after sweep.
func (s *Server) bounds(parent *session) string {
	if parent.depth <= 0 {
		return msgDepth(s.maxDepth)
	}
	if c := s.st.census(); c >= s.maxLive {
		return msgCeiling(s.maxLive, c)
	}
	if n := parent.liveChildren(); n >= s.maxConcurrent {
		return msgConcurrency(s.maxConcurrent, n)
	}
	return ""
}

// ---- POST /register --------------------------------------------------------

type registerRequest struct{ SessionID, Name, Version string }

type registerResponse struct {
	Credential string `json:"credential"`
}

// register has two paths (contracts §7). Without an approval: body (400) →
// name in --spawn-allow (403) → resolve (500) → session_id unused (identity
// 403) → register. With one: body (400) → resolve (500; the approval is
// untouched) → verify the approval (identity 403, or expired / already
// redeemed) → mark it spent → compare name, version, bytes (403) → register.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req registerRequest
	if !readJSON(w, r, map[string]*string{"session_id": &req.SessionID, "name": &req.Name, "version": &req.Version}) {
		return
	}
	if req.SessionID == "" {
		writeError(w, http.StatusBadRequest, "session_id is empty")
		return
	}
	// A session id whose credential could not be presented back (tokens are
	// bounded, and travel in a header) would register a session that can
	// never spawn or deregister: refuse it as a bad body instead.
	if n := credentialLen(req.SessionID); n > maxCredentialLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("session_id is too long: its credential would be %d bytes, more than %d", n, maxCredentialLen))
		return
	}
	if msg := checkNameVersion(req.Name, req.Version); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	approvalTokens, withApproval := r.Header[HeaderApproval]

	if !withApproval {
		if _, ok := s.spawnAllow[req.Name]; !ok {
			writeError(w, http.StatusForbidden, msgNotInSpawnAllow(req.Name))
			return
		}
		art, err := s.reg.Resolve(req.Name, req.Version)
		if err != nil {
			writeError(w, http.StatusInternalServerError, resolveFailure(req.Name, req.Version, err))
			return
		}
		s.mu.Lock()
		s.st.sweep(s.now())
		if _, taken := s.st.sessions[req.SessionID]; taken {
			s.mu.Unlock()
			writeError(w, http.StatusForbidden, msgIdentity)
			return
		}
		// A top-level registration counts toward the census and is never
		// refused by the ceiling.
		s.addSession(req.SessionID, art, s.maxDepth, nil)
		s.mu.Unlock()
		s.writeCredential(w, req.SessionID)
		return
	}

	art, err := s.reg.Resolve(req.Name, req.Version)
	if err != nil {
		writeError(w, http.StatusInternalServerError, resolveFailure(req.Name, req.Version, err))
		return
	}
	var p approvalPayload
	if len(approvalTokens) != 1 || s.appr.open(approvalTokens[0], &p) != nil || p.V != 1 {
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}

	s.mu.Lock()
	now := s.now()
	s.st.sweep(now)
	parent := s.st.sessions[p.S]
	if parent == nil || parent.status != statusRunning {
		// The session that earned the approval has ended: every figure the
		// child's bounds would be decided from is gone with it.
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}
	a := s.st.approvals[p.Nonce]
	if a != nil && a.parent != parent {
		s.mu.Unlock() // cannot happen for a token this daemon MAC'd; refuse rather than guess
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}
	switch {
	case a == nil || a.state == apReleased || !now.Before(a.deadline):
		// Forgotten by the sweep, or released: with its parent still
		// running, the only way there is its 60 seconds passing.
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgApprovalExpired)
		return
	case a.state != apPending:
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgApprovalReplayed)
		return
	}
	// Spent as soon as it verifies, before the artifact is compared, so an
	// approval presented for the wrong artifact is consumed. It keeps its
	// slot until its expiry: the specification releases a slot at
	// redemption, expiry or the parent's deregister, and at nothing else.
	a.state = apConsumed

	approved := p.Name + "@" + p.Version
	presented := req.Name + "@" + req.Version
	if approved != presented {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgApprovalCoordinates(approved, presented))
		return
	}
	if art.SHA256 != p.SHA256 {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgApprovalBytes(presented, p.SHA256, art.SHA256))
		return
	}
	if _, taken := s.st.sessions[req.SessionID]; taken {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}
	// The reservation becomes a running child: the parent's count and the
	// census are unchanged (one reservation out, one child and one session in).
	a.state = apRedeemed
	delete(parent.pending, a)
	s.st.pending--
	s.addSession(req.SessionID, art, p.Depth, parent)
	parent.children++
	s.mu.Unlock()
	s.writeCredential(w, req.SessionID)
}

// addSession records a running session. Called with the lock held.
func (s *Server) addSession(id string, art Artifact, depth int, parent *session) {
	sess := &session{
		id: id, name: art.Name, version: art.Version, sha256: art.SHA256,
		manifest: art.Manifest, allow: map[string]struct{}{},
		depth: depth, status: statusRunning, parent: parent,
		pending: map[*approval]struct{}{},
	}
	for _, n := range art.Manifest.Capabilities.Spawn.Allow {
		sess.allow[n] = struct{}{}
	}
	s.st.sessions[id] = sess
	s.st.running++
	s.st.startup.absorb(id)
}

// credentialLen is the length of the credential a session id would get.
func credentialLen(sessionID string) int {
	body, _ := json.Marshal(credentialPayload{V: 1, S: sessionID})
	return len(credentialPrefix) + b64.EncodedLen(len(body)) + 1 + b64.EncodedLen(32)
}

func (s *Server) writeCredential(w http.ResponseWriter, sessionID string) {
	tok, err := s.cred.mint(credentialPayload{V: 1, S: sessionID})
	if err != nil {
		panic(err)
	}
	writeJSON(w, http.StatusOK, registerResponse{Credential: tok})
}

// credentialSession verifies the request's credential and returns the
// session it names (which the caller must still find running).
func (s *Server) credentialSession(r *http.Request) (string, bool) {
	vals := r.Header[HeaderCredential]
	if len(vals) != 1 {
		return "", false
	}
	var p credentialPayload
	if s.cred.open(vals[0], &p) != nil || p.V != 1 || p.S == "" {
		return "", false
	}
	return p.S, true
}

// ---- POST /deregister ------------------------------------------------------

type deregisterRequest struct{ Outcome string }

// deregister: body (400) → credential (identity 403) → retire.
func (s *Server) deregister(w http.ResponseWriter, r *http.Request) {
	var req deregisterRequest
	if !readJSON(w, r, map[string]*string{"outcome": &req.Outcome}) {
		return
	}
	if req.Outcome != statusComplete && req.Outcome != statusFailed {
		writeError(w, http.StatusBadRequest, "outcome must be complete or failed")
		return
	}
	sid, ok := s.credentialSession(r)
	if !ok {
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}
	s.mu.Lock()
	s.st.sweep(s.now())
	sess := s.st.sessions[sid]
	if sess == nil || sess.status != statusRunning {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, msgIdentity)
		return
	}
	sess.status = req.Outcome
	s.st.running--
	// Every reservation it holds is released: an approval it earned can no
	// longer be redeemed by anybody.
	for a := range sess.pending {
		s.st.release(a)
	}
	if sess.parent != nil {
		sess.parent.children--
	}
	s.mu.Unlock()
	writeRaw(w, http.StatusOK, []byte("{}"))
}

// ---- GET /status/{session_id} ----------------------------------------------

type statusResponse struct {
	Status         string `json:"status"`
	DepthRemaining int    `json:"depth_remaining"`
	LiveChildren   int    `json:"live_children"`
	LiveCapsules   int    `json:"live_capsules"`
}

func (s *Server) status(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	s.st.sweep(s.now())
	sess := s.st.sessions[id]
	if sess == nil {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, msgSessionNotFound)
		return
	}
	resp := statusResponse{
		Status:         sess.status,
		DepthRemaining: sess.depth,
		LiveChildren:   sess.liveChildren(),
		LiveCapsules:   s.st.census(),
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// Snapshot is the daemon's state as figures, for tests and benchmarks.
type Snapshot struct {
	Running, Pending, Startup, Census int
}

// Snapshot reads the census exactly as a request would.
func (s *Server) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.sweep(s.now())
	st := s.st.startup.count()
	return Snapshot{Running: s.st.running, Pending: s.st.pending, Startup: st, Census: s.st.running + s.st.pending + st}
}

// ---- bodies ------------------------------------------------------------------

// readJSON reads a body of at most MaxBodyBytes, decodes one JSON object and
// fills each string field named in keys (exact key match: encoding/json's
// case-insensitive matching would take "NAME" for "name", and the text says
// extra keys are ignored). A null field is a missing one. Any failure is
// answered 400 and reported false.
func readJSON(w http.ResponseWriter, r *http.Request, fields map[string]*string) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("request body is larger than %d bytes", MaxBodyBytes))
		} else {
			writeError(w, http.StatusBadRequest, "request body could not be read")
		}
		return false
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		writeError(w, http.StatusBadRequest, "request body is not valid JSON: a JSON object is required")
		return false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		writeError(w, http.StatusBadRequest, "request body is not valid JSON: "+jsonProblem(err))
		return false
	}
	for key, dst := range fields {
		raw, ok := obj[key]
		if !ok || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("request body is not valid JSON: field %s must be a string", key))
			return false
		}
	}
	return true
}

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

func checkNameVersion(name, version string) string {
	switch {
	case name == "":
		return "name is required"
	case !manifest.IsFullName(name):
		return fmt.Sprintf("name is not a full name, <scope>/<name>: '%s'", name)
	case version == "":
		return "version is required"
	}
	return ""
}

func resolveFailure(name, version string, err error) string {
	return fmt.Sprintf("capsule '%s@%s' could not be resolved from the registry: %v", name, version, err)
}

// ---- responses ---------------------------------------------------------------

func writeRaw(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
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
