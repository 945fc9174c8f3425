package roost

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/envelope"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/running"
)

// Options configure a Referee (and the Server over it).
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

// Referee is mur-roost's decisions and everything it keeps in memory:
// sessions, approvals, reservations, the census and the two MAC keys. Each
// method is one endpoint's contract, in the order of checks docs/roost.md
// "What it checks" gives,
// taking the decoded request and the token text the caller presented (an
// absent or repeated header is ""). A refusal is a *roostapi.Error carrying
// the status and the specification's sentence. It knows nothing of HTTP
// beyond those status codes and is safe for concurrent use.
//
// Locking: mu guards st. A method whose name ends in Locked requires mu held;
// every other method takes it itself, with defer. The registry is read with
// mu not held.
type Referee struct {
	maxDepth, maxConcurrent, maxLive int
	spawnAllow                       map[string]struct{}
	reg                              Registry
	cred, appr                       *minter
	runningDir                       string

	// now is the clock approvals expire by; tests move it forward. It is read
	// with mu held, so the approval queue's grant order is its deadline order.
	now func() time.Time

	mu sync.Mutex
	st *state

	// envMemo remembers envelope.Check's verdict ("" or the refusal) per
	// pair of manifests. A manifest is immutable once parsed and the registry
	// hands out one per file identity, so the pair decides the verdict; a
	// rewritten artifact is a new manifest and a new pair.
	envMu   sync.Mutex
	envMemo map[[2]*manifest.Manifest]string

	allowSets map[*manifest.Manifest]map[string]struct{} // guarded by mu

	// depthSpent and concurrencyFull are the depth refusal and the
	// concurrency refusal for a session holding exactly --max-concurrent
	// children (the one a busy parent meets), worded once: a refusal is
	// not formatted while mu is held. Both are read-only.
	depthSpent, concurrencyFull error
}

// maxEnvMemo bounds envMemo; past it the memo starts again empty.
const maxEnvMemo = 4096

// envelope is envelope.Check(parent, child) as a refusal sentence, or "".
func (r *Referee) envelope(parent, child *manifest.Manifest) string {
	k := [2]*manifest.Manifest{parent, child}
	r.envMu.Lock()
	msg, ok := r.envMemo[k]
	r.envMu.Unlock()
	if ok {
		return msg
	}
	if ref := envelope.Check(parent, child); ref != nil {
		msg = ref.Error()
	}
	r.envMu.Lock()
	if len(r.envMemo) >= maxEnvMemo {
		clear(r.envMemo)
	}
	r.envMemo[k] = msg
	r.envMu.Unlock()
	return msg
}

// NewReferee takes the start-up census of opts.RunningDir and returns the
// referee. It fails, with the path and the OS's words, when that directory
// exists and cannot be listed. Nothing is written anywhere.
func NewReferee(opts Options) (*Referee, StartupCount, error) {
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
	r := &Referee{
		maxDepth:      opts.MaxDepth,
		maxConcurrent: opts.MaxConcurrent,
		maxLive:       opts.MaxLiveCapsules,
		spawnAllow:    map[string]struct{}{},
		reg:           opts.Registry,
		runningDir:    opts.RunningDir,
		cred:          cred,
		appr:          appr,
		st:            newState(set),
		now:           time.Now,
		envMemo:       map[[2]*manifest.Manifest]string{},
		allowSets:     map[*manifest.Manifest]map[string]struct{}{},
	}
	r.depthSpent = forbidden(msgDepth(r.maxDepth))
	r.concurrencyFull = forbidden(msgConcurrency(r.maxConcurrent, r.maxConcurrent))
	for _, n := range opts.SpawnAllow {
		r.spawnAllow[n] = struct{}{}
	}
	return r, cnt, nil
}

// Close releases the start-up census's process handles.
func (r *Referee) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.startup.close()
}

// refusal builders: one status per kind of check.
func badRequest(msg string) error {
	return &roostapi.Error{StatusCode: http.StatusBadRequest, Message: msg}
}
func forbidden(msg string) error {
	return &roostapi.Error{StatusCode: http.StatusForbidden, Message: msg}
}
func notFound(msg string) error {
	return &roostapi.Error{StatusCode: http.StatusNotFound, Message: msg}
}
func unresolved(name, version string, err error) error {
	return &roostapi.Error{StatusCode: http.StatusInternalServerError, Message: msgUnresolved(name, version, err)}
}
func identity() error { return forbidden(msgIdentity) }

// ---- POST /spawn -----------------------------------------------------------

// Spawn decides POST /spawn: fields (400) → credential names a running
// session (identity 403) → name in that session's allow list (403) → depth →
// machine ceiling → concurrency (403 each) → resolve the child (500) →
// envelope (403) → grant: reserve a slot and mint the approval.
func (r *Referee) Spawn(credential string, req roostapi.SpawnRequest) (roostapi.SpawnResponse, error) {
	if msg := checkNameVersion(req.Name, req.Version); msg != "" {
		return roostapi.SpawnResponse{}, badRequest(msg)
	}
	sid, ok := r.credentialSession(credential)
	if !ok {
		return roostapi.SpawnResponse{}, identity()
	}
	// The census's one re-check for this request, before the lock: admit
	// and grant both read the figure it leaves.
	r.st.startup.refresh()
	parent, parentManifest, err := r.admit(sid, req.Name)
	if err != nil {
		return roostapi.SpawnResponse{}, err
	}
	// The registry is read outside the lock: hashing an artifact must not
	// hold up every other session's requests.
	art, err := r.reg.Resolve(req.Name, req.Version)
	if err != nil {
		return roostapi.SpawnResponse{}, unresolved(req.Name, req.Version, err)
	}
	if msg := r.envelope(parentManifest, art.Manifest); msg != "" {
		return roostapi.SpawnResponse{}, forbidden(msg)
	}
	a, err := r.grant(parent, art)
	if err != nil {
		return roostapi.SpawnResponse{}, err
	}
	expires := a.deadline.UnixMilli()
	tok, err := r.appr.mint(approvalPayload{
		V: 1, S: parent.id, Name: art.Name, Version: art.Version, SHA256: art.SHA256,
		Depth: a.depth, Expires: expires, Nonce: a.nonce,
	})
	if err != nil { // json.Marshal of strings and ints cannot fail
		panic(err)
	}
	return roostapi.SpawnResponse{
		Approval: tok, Name: art.Name, Version: art.Version, SHA256: art.SHA256, ExpiresAtMS: expires,
	}, nil
}

// admit is the part of POST /spawn asked before the registry is read: the
// session is running, the name is in its allow list, and the bounds hold. It
// returns the session and its manifest (which never changes once recorded).
func (r *Referee) admit(sid, name string) (*session, *manifest.Manifest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	parent := r.st.sessions[sid]
	if parent == nil || parent.status != statusRunning {
		return nil, nil, identity()
	}
	if _, ok := parent.allow[name]; !ok {
		return nil, nil, forbidden(msgNotInParentAllow(name))
	}
	if err := r.boundsLocked(parent); err != nil {
		return nil, nil, err
	}
	return parent, parent.manifest, nil
}

// grant reserves a slot for art under parent and records the approval. The
// bounds are asked again in this one critical section, because other
// requests ran while the registry was read: without it two concurrent
// spawns could both pass admit and together exceed --max-concurrent or the
// ceiling.
func (r *Referee) grant(parent *session, art Artifact) (*approval, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.st.sweep(now)
	if parent.status != statusRunning {
		return nil, identity()
	}
	if err := r.boundsLocked(parent); err != nil {
		return nil, err
	}
	a := &approval{
		nonce:    newNonce(),
		parent:   parent,
		depth:    parent.depth - 1,
		deadline: now.Add(approvalLifetime),
		state:    apPending,
	}
	r.st.approvals[a.nonce] = a
	r.st.queue = append(r.st.queue, a)
	if parent.pending == nil {
		parent.pending = map[*approval]struct{}{}
	}
	parent.pending[a] = struct{}{}
	r.st.pending++
	return a, nil
}

// boundsLocked asks depth, then the machine ceiling, then concurrency, and
// returns the first refusal, or nil. Call sweepLocked first.
func (r *Referee) boundsLocked(parent *session) error {
	if parent.depth <= 0 {
		return r.depthSpent
	}
	c := r.st.census()
	if c >= r.maxLive {
		return forbidden(msgCeiling(r.maxLive, c))
	}
	if n := parent.liveChildren(); n == r.maxConcurrent {
		return r.concurrencyFull
	} else if n > r.maxConcurrent {
		return forbidden(msgConcurrency(r.maxConcurrent, n))
	}
	return nil
}

// sweepLocked applies every expiry due by now, ends the sessions the census
// found gone without a deregistration, and looks again for the evidence of
// registrations not yet counted.
func (r *Referee) sweepLocked() {
	r.st.sweep(r.now())
	for _, id := range r.st.startup.takeEnded() {
		if sess := r.st.sessions[id]; sess != nil && sess.status == statusRunning {
			r.endLocked(sess, statusFailed)
		}
	}
	r.confirmLocked()
}

// maxWatchTries bounds how often one session's running record is looked for.
const maxWatchTries = 8

// maxConfirmPerRead bounds the records looked for on one census read, so a
// burst of registrations that never write one costs each request little.
const maxConfirmPerRead = 16

// The census counts a registration only on the evidence it counts a capsule
// found at start-up by (the census's evidence rule, "evaluated when the
// census is read"): a running record with the session's id in the daemon's
// own running directory, owned by the uid of the process that registered it,
// whose process is live and runs as that uid. The runtime writes its record
// before it registers, so a real session is counted from its registration;
// a registration from another user, or one no capsule stands behind, is
// answered as before but never fills the machine ceiling. A counted session's
// process is watched from then on (startupSet.adopt), so one killed without
// deregistering (kill -9) is ended, failed, at the next census read — even
// once `mur ps` has pruned its record.
//
// A daemon with no running directory (Options.RunningDir "", in-process
// tests) has no evidence to read and counts every registration.

// evidence looks for session id's running record on behalf of uid (the
// registering process's; noPeer finds nothing). It reads files: call it
// without mu held, or bounded (confirmLocked).
func (r *Referee) evidence(id string, uid int) (running.Record, bool) {
	if uid == noPeer || r.runningDir == "" {
		return running.Record{}, false
	}
	rec, state, err := running.Read(r.runningDir, id)
	if err != nil || state != running.Live {
		return running.Record{}, false
	}
	fi, err := os.Lstat(filepath.Join(r.runningDir, id+".json"))
	if err != nil {
		return running.Record{}, false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
		return running.Record{}, false
	}
	if procUID(rec.PID) != uid {
		return running.Record{}, false
	}
	return rec, true
}

// procUID is the real uid of process pid, or noPeer.
func procUID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return noPeer
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return noPeer
			}
			uid, err := strconv.Atoi(f[0])
			if err != nil {
				return noPeer
			}
			return uid
		}
	}
	return noPeer
}

// confirmLocked looks again, a bounded number of times, for the evidence of
// running sessions not yet counted (a record written after the registration).
func (r *Referee) confirmLocked() {
	q := r.st.unconfirmed
	if len(q) == 0 {
		return
	}
	n := min(len(q), maxConfirmPerRead)
	var again []*session
	for _, sess := range q[:n] {
		if sess.status != statusRunning || sess.counted {
			continue
		}
		sess.watchTries++
		if rec, ok := r.evidence(sess.id, sess.uid); ok {
			r.countLocked(sess, &rec)
			continue
		}
		if sess.watchTries < maxWatchTries {
			again = append(again, sess)
		}
	}
	rest := append(q[n:len(q):len(q)], again...)
	clear(q[:n])
	r.st.unconfirmed = rest
}

// countLocked makes the census count a running session: it is one capsule
// with a start-up record of its id, and its record's process is watched.
func (r *Referee) countLocked(sess *session, rec *running.Record) {
	sess.counted = true
	r.st.counted++
	r.st.startup.absorb(sess.id)
	if rec != nil {
		r.st.startup.adopt(*rec)
	}
}

// ---- POST /register --------------------------------------------------------

// checkRegisterFields is the 400 step both register paths begin with.
func checkRegisterFields(req roostapi.RegisterRequest) error {
	if req.SessionID == "" {
		return badRequest(msgSessionIDEmpty)
	}
	// A session id whose credential could not be presented back (tokens are
	// bounded, and travel in a header) would register a session that can
	// never spawn or deregister: refuse it as a bad body instead.
	if n := credentialLen(req.SessionID); n > maxCredentialLen {
		return badRequest(msgSessionIDTooLong(n, maxCredentialLen))
	}
	if msg := checkNameVersion(req.Name, req.Version); msg != "" {
		return badRequest(msg)
	}
	return nil
}

// RegisterTopLevel decides POST /register presented with no approval: fields
// (400) → name in --spawn-allow (403, published or not) → resolve (500) →
// session_id unused (identity 403) → register with depth --max-depth. A
// top-level registration counts toward the census and is never refused by
// the ceiling.
//
// peer is the uid of the registering process (noPeer when unknown): the
// census counts the session only on a running record of that uid's.
func (r *Referee) RegisterTopLevel(req roostapi.RegisterRequest, peer int) (roostapi.RegisterResponse, error) {
	if err := checkRegisterFields(req); err != nil {
		return roostapi.RegisterResponse{}, err
	}
	if _, ok := r.spawnAllow[req.Name]; !ok {
		return roostapi.RegisterResponse{}, forbidden(msgNotInSpawnAllow(req.Name))
	}
	art, err := r.reg.Resolve(req.Name, req.Version)
	if err != nil {
		return roostapi.RegisterResponse{}, unresolved(req.Name, req.Version, err)
	}
	ev, ok := r.evidence(req.SessionID, peer)
	if err := r.registerTop(req.SessionID, art, peer, evidenceOf(ev, ok)); err != nil {
		return roostapi.RegisterResponse{}, err
	}
	return r.credentialFor(req.SessionID), nil
}

func evidenceOf(rec running.Record, ok bool) *running.Record {
	if !ok {
		return nil
	}
	return &rec
}

func (r *Referee) registerTop(id string, art Artifact, peer int, ev *running.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	if r.st.registered(id) {
		return identity()
	}
	r.addSessionLocked(id, art, r.maxDepth, nil, peer, ev)
	return nil
}

// RegisterApproved decides POST /register presented with an approval (any
// header value, even an empty one, takes this path): fields (400) → resolve
// (500; the approval is untouched) → the approval verifies and its granting
// session is running (identity 403) → not expired, not already presented
// (403) → marked spent → same name and version (403) → same content hash
// (403) → session_id unused (identity 403) → register with the depth sealed
// in the approval; the reservation becomes the running child.
func (r *Referee) RegisterApproved(req roostapi.RegisterRequest, approvalToken string, peer int) (roostapi.RegisterResponse, error) {
	if err := checkRegisterFields(req); err != nil {
		return roostapi.RegisterResponse{}, err
	}
	art, err := r.reg.Resolve(req.Name, req.Version)
	if err != nil {
		return roostapi.RegisterResponse{}, unresolved(req.Name, req.Version, err)
	}
	var p approvalPayload
	if r.appr.open(approvalToken, &p) != nil || p.V != 1 {
		return roostapi.RegisterResponse{}, identity()
	}
	ev, ok := r.evidence(req.SessionID, peer)
	if err := r.redeem(p, req, art, peer, evidenceOf(ev, ok)); err != nil {
		return roostapi.RegisterResponse{}, err
	}
	return r.credentialFor(req.SessionID), nil
}

// redeem is RegisterApproved's decision on the state, in one critical
// section: from finding the granting session to recording the child.
func (r *Referee) redeem(p approvalPayload, req roostapi.RegisterRequest, art Artifact, peer int, ev *running.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.st.sweep(now)
	parent := r.st.sessions[p.S]
	if parent == nil || parent.status != statusRunning {
		// The session that earned the approval has ended: every figure the
		// child's bounds would be decided from is gone with it.
		return identity()
	}
	a := r.st.approvals[p.Nonce]
	if a != nil && a.parent != parent {
		return identity() // cannot happen for a token this daemon MAC'd; refuse rather than guess
	}
	switch {
	case a == nil || a.state == apReleased || !now.Before(a.deadline):
		// Forgotten by the sweep, or released: with its parent still
		// running, the only way there is its 60 seconds passing.
		return forbidden(msgApprovalExpired)
	case a.state != apPending:
		return forbidden(msgApprovalReplayed)
	}
	// Spent as soon as it verifies, before the artifact is compared, so an
	// approval presented for the wrong artifact is consumed. It keeps its
	// slot until its expiry: the specification releases a slot at
	// redemption, expiry or the parent's deregister, and at nothing else.
	a.state = apConsumed

	approved := p.Name + "@" + p.Version
	presented := req.Name + "@" + req.Version
	if approved != presented {
		return forbidden(msgApprovalCoordinates(approved, presented))
	}
	if art.SHA256 != p.SHA256 {
		return forbidden(msgApprovalBytes(presented, p.SHA256, art.SHA256))
	}
	if r.st.registered(req.SessionID) {
		return identity()
	}
	// The reservation becomes a running child: the parent's count and the
	// census are unchanged (one reservation out, one child and one session
	// in), unless the child has no evidence to be counted on.
	a.state = apRedeemed
	delete(parent.pending, a)
	r.st.pending--
	r.addSessionLocked(req.SessionID, art, p.Depth, parent, peer, ev)
	parent.children++
	return nil
}

// addSessionLocked records a running session registered by uid peer, and
// counts it when ev, its running record, is the evidence (or when the
// daemon reads no running directory). One without is looked for again on
// the next census reads, unless its registering uid is unknown.
func (r *Referee) addSessionLocked(id string, art Artifact, depth int, parent *session, peer int, ev *running.Record) {
	sess := &session{
		id: id, name: art.Name, version: art.Version, sha256: art.SHA256,
		manifest: art.Manifest, allow: r.allowOf(art.Manifest),
		depth: depth, status: statusRunning, parent: parent, uid: peer,
	}
	r.st.sessions[id] = sess
	r.st.running++
	switch {
	case r.runningDir == "" || ev != nil:
		r.countLocked(sess, ev)
	case peer != noPeer:
		r.st.unconfirmed = append(r.st.unconfirmed, sess)
	}
}

// allowOf is m's capabilities.spawn.allow as a set, one per manifest (the
// registry hands out one manifest per artifact identity). Call with mu held.
func (r *Referee) allowOf(m *manifest.Manifest) map[string]struct{} {
	if set, ok := r.allowSets[m]; ok {
		return set
	}
	set := make(map[string]struct{}, len(m.Capabilities.Spawn.Allow))
	for _, n := range m.Capabilities.Spawn.Allow {
		set[n] = struct{}{}
	}
	if len(r.allowSets) >= maxEnvMemo {
		clear(r.allowSets)
	}
	r.allowSets[m] = set
	return set
}

// credentialLen is the length of the credential a session id would get.
func credentialLen(sessionID string) int {
	var stack [256]byte
	body, ok := appendCredentialPayload(stack[:0], credentialPayload{V: 1, S: sessionID})
	if !ok {
		body, _ = json.Marshal(credentialPayload{V: 1, S: sessionID})
	}
	return len(credentialPrefix) + b64.EncodedLen(len(body)) + 1 + b64.EncodedLen(32)
}

func (r *Referee) credentialFor(sessionID string) roostapi.RegisterResponse {
	tok, err := r.cred.mint(credentialPayload{V: 1, S: sessionID})
	if err != nil {
		panic(err)
	}
	return roostapi.RegisterResponse{Credential: tok}
}

// credentialSession verifies a credential and returns the session it names
// (which the caller must still find running).
func (r *Referee) credentialSession(tok string) (string, bool) {
	var p credentialPayload
	if r.cred.open(tok, &p) != nil || p.V != 1 || p.S == "" {
		return "", false
	}
	return p.S, true
}

// ---- POST /deregister ------------------------------------------------------

// Deregister decides POST /deregister: outcome (400) → credential names a
// running session (identity 403) → its status becomes the outcome; its
// reservations, its own slot and its slot in its parent are released.
func (r *Referee) Deregister(credential string, req roostapi.DeregisterRequest) error {
	if req.Outcome != statusComplete && req.Outcome != statusFailed {
		return badRequest(msgOutcome)
	}
	sid, ok := r.credentialSession(credential)
	if !ok {
		return identity()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	sess := r.st.sessions[sid]
	if sess == nil || sess.status != statusRunning {
		return identity()
	}
	r.endLocked(sess, req.Outcome)
	return nil
}

// endLocked ends a running session with outcome: its deregistration, or
// the census's evidence that its process is gone.
func (r *Referee) endLocked(sess *session, outcome string) {
	sess.status = outcome
	r.st.running--
	if sess.counted {
		sess.counted = false
		r.st.counted--
	}
	// Every reservation it holds is released: an approval it earned can no
	// longer be redeemed by anybody.
	for a := range sess.pending {
		r.st.release(a)
	}
	if p := sess.parent; p != nil {
		p.children--
		r.st.retireIfDone(p)
	}
	// A start-up capsule that registered under this id is not gone because
	// its session deregistered: it counts again until its exit is seen.
	r.st.startup.release(sess.id)
	// Only its figures are asked of it from now on.
	sess.manifest, sess.allow, sess.pending, sess.parent = nil, nil, nil, nil
	sess.name, sess.version, sess.sha256 = "", "", ""
	r.st.retireIfDone(sess)
}

// ---- GET /status/{session_id} ----------------------------------------------

// Status answers GET /status/{id}: the session's figures, or a 404 for an id
// never registered.
func (r *Referee) Status(id string) (roostapi.StatusResponse, error) {
	r.st.startup.refresh()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	sess := r.st.sessions[id]
	if sess == nil {
		e, ok := r.st.ended[id]
		if !ok {
			return roostapi.StatusResponse{}, notFound(msgSessionNotFound)
		}
		return roostapi.StatusResponse{
			Status: e.status(), DepthRemaining: e.depth(), LiveCapsules: r.st.census(),
		}, nil
	}
	return roostapi.StatusResponse{
		Status:         sess.status,
		DepthRemaining: sess.depth,
		LiveChildren:   sess.liveChildren(),
		LiveCapsules:   r.st.census(),
	}, nil
}

// Snapshot is the daemon's state as figures, for tests and benchmarks.
// Running is every session registered and not ended, Counted those the
// census counts (see evidence).
type Snapshot struct {
	Running, Counted, Pending, Startup, Census int
}

// Snapshot reads the census exactly as a request would.
func (r *Referee) Snapshot() Snapshot {
	r.st.startup.refresh()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	return Snapshot{Running: r.st.running, Counted: r.st.counted, Pending: r.st.pending,
		Startup: r.st.startup.counted(), Census: r.st.census()}
}

// ---- field checks ------------------------------------------------------------

func checkNameVersion(name, version string) string {
	switch {
	case name == "":
		return msgNameRequired
	case !manifest.IsFullName(name):
		return msgNotFullName(name)
	case version == "":
		return msgVersionRequired
	}
	return ""
}
