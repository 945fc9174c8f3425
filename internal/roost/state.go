package roost

import (
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// approvalLifetime is how long an approval may be redeemed.
const approvalLifetime = 60 * time.Second

// Session statuses, as GET /status reports them.
const (
	statusRunning  = roostapi.StatusRunning
	statusComplete = roostapi.StatusComplete
	statusFailed   = roostapi.StatusFailed
)

// session is one registered session. GET /status answers for a retired
// session until the daemon exits, and its id is never registered again, so
// no session is ever forgotten: a retired one whose children have all ended
// is kept only as an endedSession, what GET /status reads of it.
type session struct {
	id       string
	name     string
	version  string
	sha256   string
	manifest *manifest.Manifest  // the registry manifest: the session's grants
	allow    map[string]struct{} // capabilities.spawn.allow; shared by every session of one manifest, read-only
	depth    int                 // levels still available below this session
	status   string
	parent   *session // nil for a top-level registration

	// uid is the registering process's (noPeer when unknown); counted
	// whether the census counts the session, on its running record of that
	// uid's. watchTries counts the census reads that looked for the record
	// (confirmLocked); bounded, so a registration that never writes one
	// costs a census read nothing after a few.
	uid        int
	counted    bool
	watchTries int

	children int                    // approved children that registered and are running
	pending  map[*approval]struct{} // approvals that reserve a slot: granted, not redeemed, not expired; nil until the first
}

// endedSession is a retired session with no running child, as GET /status
// reports it (it has no live children): its depth, negated and less one for
// a failed outcome — a depth is never negative. With its map entry and its id
// it is about 60 bytes, against several hundred for a session record.
type endedSession int

func newEnded(depth int, failed bool) endedSession {
	if failed {
		return endedSession(-depth - 1)
	}
	return endedSession(depth)
}

func (e endedSession) depth() int {
	if e < 0 {
		return int(-e - 1)
	}
	return int(e)
}

func (e endedSession) status() string {
	if e < 0 {
		return statusFailed
	}
	return statusComplete
}

// liveChildren counts running children plus approvals still reserving a slot
// (approved, not launched: "counting one it has been approved to launch and
// has not launched yet").
func (s *session) liveChildren() int { return s.children + len(s.pending) }

// approval states. An approval reserves a slot in its parent and in the
// census from its grant until it is redeemed, its 60 seconds pass, or its
// parent deregisters — and only those: one presented for the wrong artifact
// is consumed (it can never be redeemed) but keeps its slot until its expiry,
// whether or not anybody ever presented it: an unused approval holds its
// place in the concurrency cap until it expires.
const (
	apPending  = iota // granted, not yet presented; reserves a slot
	apConsumed        // presented, and the comparison failed; still reserves its slot
	apRedeemed        // a child registered with it; the slot became that child
	apReleased        // expired or its parent deregistered; reserves nothing
)

// reserves reports whether the approval holds a slot.
func (a *approval) reserves() bool { return a.state == apPending || a.state == apConsumed }

// approval is the daemon's record of one granted approval. The token carries
// the artifact and the rest under a MAC (redemption compares the token's
// figures, so they are not kept twice); this record carries what a token
// cannot: whether it has been presented, and the slot it reserves.
type approval struct {
	nonce    string
	parent   *session
	depth    int
	deadline time.Time // monotonic: grant + 60 s
	state    int
}

// state is everything the daemon knows, in memory, behind one mutex. Nothing
// in it is swept by a timer: an approval's expiry is applied when a request
// next reads the state (sweep), which is what makes the census exact at the
// moment it is read and leaves nothing running between requests.
type state struct {
	sessions  map[string]*session // running, or retired with running children
	ended     map[string]endedSession
	approvals map[string]*approval // by nonce, until 60 s after the grant
	queue     []*approval          // in grant order, hence in deadline order
	qhead     int
	running   int // sessions with status running
	counted   int // of those, the ones the census counts (see Referee.evidence)
	// unconfirmed holds running sessions of a known uid not yet counted,
	// whose record is looked for again on census reads (a few times each).
	unconfirmed []*session
	pending     int // approvals that reserve a slot (apPending or apConsumed)
	startup     *startupSet
}

func newState(startup *startupSet) *state {
	return &state{
		sessions:  map[string]*session{},
		ended:     map[string]endedSession{},
		approvals: map[string]*approval{},
		startup:   startup,
	}
}

// sweep expires every approval whose 60 seconds have passed: one that still
// reserves a slot gives it back, and the record is forgotten (its token then reads as
// expired, which is what it is).
func (st *state) sweep(now time.Time) {
	for st.qhead < len(st.queue) {
		a := st.queue[st.qhead]
		if now.Before(a.deadline) {
			break
		}
		st.queue[st.qhead] = nil
		st.qhead++
		if a.reserves() {
			st.release(a)
		}
		delete(st.approvals, a.nonce)
	}
	if st.qhead > 1024 && st.qhead*2 > len(st.queue) {
		n := copy(st.queue, st.queue[st.qhead:])
		clear(st.queue[n:])
		st.queue = st.queue[:n]
		st.qhead = 0
	}
}

// registered reports whether id was ever registered.
func (st *state) registered(id string) bool {
	if _, ok := st.sessions[id]; ok {
		return true
	}
	_, ok := st.ended[id]
	return ok
}

// retireIfDone compacts a retired session once no child of it runs: nothing
// but its figures can be asked of it any more.
func (st *state) retireIfDone(s *session) {
	if s.status == statusRunning || s.children > 0 || len(s.pending) > 0 {
		return
	}
	st.ended[s.id] = newEnded(s.depth, s.status == statusFailed)
	delete(st.sessions, s.id)
}

// release gives back an approval's slot in its parent and the census.
func (st *state) release(a *approval) {
	a.state = apReleased
	delete(a.parent.pending, a)
	st.pending--
}

// census is the machine count: running tracked sessions counted on their
// evidence (Referee.evidence), unredeemed
// unexpired approvals, and start-up capsules still running as of the
// request's re-check (startup.refresh, before the state lock). Call sweep
// first.
func (st *state) census() int {
	return st.counted + st.pending + st.startup.counted()
}
