package roost

import (
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
)

// approvalLifetime is how long an approval may be redeemed.
const approvalLifetime = 60 * time.Second

// Session statuses, as GET /status reports them.
const (
	statusRunning  = "running"
	statusComplete = "complete"
	statusFailed   = "failed"
)

// session is one registered session. Records are never removed: GET /status
// answers for a retired session until the daemon exits.
type session struct {
	id       string
	name     string
	version  string
	sha256   string
	manifest *manifest.Manifest  // the registry manifest: the session's grants
	allow    map[string]struct{} // capabilities.spawn.allow
	depth    int                 // levels still available below this session
	status   string
	parent   *session // nil for a top-level registration

	children int                    // approved children that registered and are running
	pending  map[*approval]struct{} // approvals granted and not yet redeemed, expired or released
}

// liveChildren counts running children plus approved, unlaunched ones.
func (s *session) liveChildren() int { return s.children + len(s.pending) }

// approval states.
const (
	apPending  = iota // reserves a slot in its parent and in the census
	apSpent           // presented at POST /register (redeemed or consumed)
	apReleased        // expired or its parent deregistered
)

// approval is the daemon's record of one granted approval. The token carries
// the same facts under a MAC; this record carries what a token cannot: whether
// it has been presented, and the slot it reserves.
type approval struct {
	nonce    string
	parent   *session
	name     string
	version  string
	sha256   string
	depth    int
	deadline time.Time // monotonic: grant + 60 s
	state    int
}

// state is everything the daemon knows, in memory, behind one mutex. Nothing
// in it is swept by a timer: an approval's expiry is applied when a request
// next reads the state (sweep), which is what makes the census exact at the
// moment it is read and leaves nothing running between requests.
type state struct {
	sessions  map[string]*session
	approvals map[string]*approval // by nonce, until 60 s after the grant
	queue     []*approval          // in grant order, hence in deadline order
	qhead     int
	running   int // sessions with status running
	pending   int // approvals in apPending
	startup   *startupSet
}

func newState(startup *startupSet) *state {
	return &state{
		sessions:  map[string]*session{},
		approvals: map[string]*approval{},
		startup:   startup,
	}
}

// sweep expires every approval whose 60 seconds have passed: a pending one
// gives its slot back, and the record is forgotten (its token then reads as
// expired, which is what it is).
func (st *state) sweep(now time.Time) {
	for st.qhead < len(st.queue) {
		a := st.queue[st.qhead]
		if now.Before(a.deadline) {
			break
		}
		st.queue[st.qhead] = nil
		st.qhead++
		if a.state == apPending {
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

// release gives back a pending approval's slot in its parent and the census.
func (st *state) release(a *approval) {
	a.state = apReleased
	delete(a.parent.pending, a)
	st.pending--
}

// census is the machine count: running tracked sessions, unredeemed
// unexpired approvals, and start-up capsules still running (re-checked here).
// Call sweep first.
func (st *state) census() int {
	return st.running + st.pending + st.startup.count()
}
