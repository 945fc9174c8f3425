package roost

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

func (x *refT) child(parentCred, id string) string {
	x.t.Helper()
	g := x.grant(parentCred, "local/worker-b", "0.1.0")
	resp, err := x.r.RegisterApproved(roostapi.RegisterRequest{SessionID: id, Name: "local/worker-b", Version: "0.1.0"}, g.Approval, noPeer)
	if err != nil {
		x.t.Fatalf("register child %s: %v", id, err)
	}
	return resp.Credential
}

func (x *refT) deregister(cred, outcome string) {
	x.t.Helper()
	if err := x.r.Deregister(cred, roostapi.DeregisterRequest{Outcome: outcome}); err != nil {
		x.t.Fatalf("deregister: %v", err)
	}
}

func (x *refT) figures(id string) roostapi.StatusResponse {
	x.t.Helper()
	st, err := x.r.Status(id)
	if err != nil {
		x.t.Fatalf("status %s: %v", id, err)
	}
	return st
}

// A retired session keeps answering GET /status with its figures, and its
// id stays taken, whether it is still a full record (a child of it runs) or
// has been compacted (none does); an approval it earned is refused.
func TestRetiredSessionsCompacted(t *testing.T) {
	t.Parallel()
	x := newRef(t, defaultOpts())
	pc := x.top("ses_p", "local/orchestrator")
	cc := x.child(pc, "ses_c")
	left := x.grant(pc, "local/worker-b", "0.1.0")
	x.deregister(pc, statusFailed)

	if got, want := x.figures("ses_p"), (roostapi.StatusResponse{Status: statusFailed, DepthRemaining: 3, LiveChildren: 1, LiveCapsules: 1}); got != want {
		t.Fatalf("retired parent with a running child: %+v, want %+v", got, want)
	}
	if _, compacted := x.r.st.ended["ses_p"]; compacted {
		t.Fatal("the parent was compacted while its child runs")
	}
	x.deregister(cc, statusComplete)
	if _, compacted := x.r.st.ended["ses_p"]; !compacted {
		t.Fatal("the parent was not compacted once its last child ended")
	}
	for _, tc := range []struct {
		id   string
		want roostapi.StatusResponse
	}{
		{"ses_p", roostapi.StatusResponse{Status: statusFailed, DepthRemaining: 3, LiveChildren: 0, LiveCapsules: 0}},
		{"ses_c", roostapi.StatusResponse{Status: statusComplete, DepthRemaining: 2, LiveChildren: 0, LiveCapsules: 0}},
	} {
		if got := x.figures(tc.id); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.id, got, tc.want)
		}
		_, err := x.r.RegisterTopLevel(roostapi.RegisterRequest{SessionID: tc.id, Name: "local/orchestrator", Version: "0.1.0"}, noPeer)
		refusal(t, tc.id+" registered again", err, 403, msgIdentity)
		refusal(t, tc.id+" deregistered again", x.r.Deregister(map[string]string{"ses_p": pc, "ses_c": cc}[tc.id], roostapi.DeregisterRequest{Outcome: statusComplete}), 403, msgIdentity)
	}
	_, err := x.r.RegisterApproved(roostapi.RegisterRequest{SessionID: "ses_late", Name: "local/worker-b", Version: "0.1.0"}, left.Approval, noPeer)
	refusal(t, "approval of a retired parent", err, 403, msgIdentity)
	if _, err := x.r.Status("ses_never"); err == nil {
		t.Fatal("an id never registered answered")
	}
}

// The memory a retired session keeps is what GET /status needs of it: at most
// 1 KiB each, heap measured after two collections over 50,000 sessions
// registered and deregistered.
func TestRetiredSessionMemory(t *testing.T) {
	x := newRef(t, Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 1 << 30})
	// Past the racy window, as a registry in service is: every registration
	// shares one resolved manifest.
	x.r.reg.(*storeRegistry).now = func() time.Time { return time.Now().Add(time.Hour) }
	const n = 50000
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for i := range 100 { // the registry's and the memos' first entries
		x.deregister(x.top(fmt.Sprintf("ses_warm_%d", i), "local/orchestrator"), statusComplete)
	}
	heap()
	before := heap()
	for i := range n {
		x.deregister(x.top(fmt.Sprintf("ses_%08d", i), "local/orchestrator"), statusComplete)
	}
	heap()
	after := heap()
	if len(x.r.st.ended) != n+100 || len(x.r.st.sessions) != 0 {
		t.Fatalf("%d retired, %d records", len(x.r.st.ended), len(x.r.st.sessions))
	}
	per := (float64(after) - float64(before)) / n
	t.Logf("%.0f B per retired session (%d sessions; heap %d → %d B)", per, n, before, after)
	if per > 1024 {
		t.Fatalf("%.0f B per retired session, more than 1 KiB", per)
	}
	runtime.KeepAlive(x)
}

func TestEndedSessionPacking(t *testing.T) {
	t.Parallel()
	for _, depth := range []int{0, 1, 3, 1 << 40, math.MaxInt} {
		for _, failed := range []bool{false, true} {
			e := newEnded(depth, failed)
			want := statusComplete
			if failed {
				want = statusFailed
			}
			if e.depth() != depth || e.status() != want {
				t.Errorf("newEnded(%d, %v) reads back as %d %s", depth, failed, e.depth(), e.status())
			}
		}
	}
}
