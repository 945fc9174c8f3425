package roost

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/envelope"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// These tests drive the Referee directly, with no HTTP: the decisions, their
// order and their sentences are the referee's, so they are asserted here
// on the values it returns. The registry is the real artifact store.

// refT is a referee over the standard fixture, on a clock the test moves.
type refT struct {
	t   *testing.T
	r   *Referee
	fx  fixture
	clk *fakeClock
}

func newRef(t *testing.T, opts Options) *refT {
	t.Helper()
	fx := newFixture(t)
	if opts.Registry == nil {
		opts.Registry = StoreRegistry(fx.reg)
	}
	if opts.SpawnAllow == nil {
		opts.SpawnAllow = []string{"local/orchestrator", "local/self", "local/missing"}
	}
	r, _, err := NewReferee(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	clk := &fakeClock{t: time.Unix(1_750_000_000, 0)}
	r.now = clk.now
	return &refT{t: t, r: r, fx: fx, clk: clk}
}

func defaultOpts() Options { return Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16} }

// top registers a top-level session and returns its credential.
func (x *refT) top(id, name string) string {
	x.t.Helper()
	resp, err := x.r.RegisterTopLevel(roostapi.RegisterRequest{SessionID: id, Name: name, Version: "0.1.0"}, noPeer)
	if err != nil {
		x.t.Fatalf("register %s: %v", id, err)
	}
	return resp.Credential
}

func (x *refT) grant(cred, name, version string) roostapi.SpawnResponse {
	x.t.Helper()
	g, err := x.r.Spawn(cred, roostapi.SpawnRequest{Name: name, Version: version})
	if err != nil {
		x.t.Fatalf("spawn %s@%s: %v", name, version, err)
	}
	return g
}

// refusal asserts err is a refusal with this status and sentence ("" = any
// sentence beginning with prefix).
func refusal(t *testing.T, what string, err error, code int, msg string) {
	t.Helper()
	var re *roostapi.Error
	if !errors.As(err, &re) {
		t.Fatalf("%s: got %v, want a %d refusal %q", what, err, code, msg)
	}
	if re.StatusCode != code || re.Message != msg {
		t.Fatalf("%s: got %d %q\nwant %d %q", what, re.StatusCode, re.Message, code, msg)
	}
}

func TestRefereeSpawnOrderOfChecks(t *testing.T) {
	t.Parallel()
	wide := (&envelope.Refusal{Key: envelope.KeyNetworkAllow, Entry: "api.example.com"}).Error()
	for _, tc := range []struct {
		what string
		opts func(*Options)
		cred string // "ok" = the orchestrator's, "ghost" = minted for an unregistered id, "approval" = an approval
		req  roostapi.SpawnRequest
		code int
		msg  string
	}{
		// 400 before identity: a bad body is judged before any credential.
		{"no name, no credential", nil, "", roostapi.SpawnRequest{Version: "0.1.0"}, 400, msgNameRequired},
		{"bare name, no credential", nil, "", roostapi.SpawnRequest{Name: "worker", Version: "0.1.0"}, 400, msgNotFullName("worker")},
		{"no version", nil, "", roostapi.SpawnRequest{Name: "local/worker-a"}, 400, msgVersionRequired},
		{"no credential", nil, "", roostapi.SpawnRequest{Name: "local/worker-a", Version: "0.1.0"}, 403, msgIdentity},
		{"garbage credential", nil, "msc1.x.y", roostapi.SpawnRequest{Name: "local/worker-a", Version: "0.1.0"}, 403, msgIdentity},
		{"credential of no session", nil, "ghost", roostapi.SpawnRequest{Name: "local/worker-a", Version: "0.1.0"}, 403, msgIdentity},
		{"approval as credential", nil, "approval", roostapi.SpawnRequest{Name: "local/worker-a", Version: "0.1.0"}, 403, msgIdentity},
		// The allow list is asked before the registry: an unpublished name
		// outside it is a 403, not a 500.
		{"not in parent's allow", nil, "ok", roostapi.SpawnRequest{Name: "local/nowhere", Version: "0.1.0"}, 403, msgNotInParentAllow("local/nowhere")},
		// Depth, then ceiling, then concurrency, all before the registry.
		{"depth before ceiling", func(o *Options) { o.MaxDepth, o.MaxLiveCapsules, o.MaxConcurrent = 0, 0, 0 },
			"ok", roostapi.SpawnRequest{Name: "local/worker-a", Version: "9.9.9"}, 403, msgDepth(0)},
		{"ceiling before concurrency", func(o *Options) { o.MaxLiveCapsules, o.MaxConcurrent = 2, 0 },
			"ok", roostapi.SpawnRequest{Name: "local/worker-a", Version: "9.9.9"}, 403, msgCeiling(2, 2)},
		{"concurrency before resolve", func(o *Options) { o.MaxConcurrent = 0 },
			"ok", roostapi.SpawnRequest{Name: "local/worker-a", Version: "9.9.9"}, 403, msgConcurrency(0, 0)},
		{"envelope", nil, "ok", roostapi.SpawnRequest{Name: "local/wide", Version: "0.1.0"}, 403, wide},
	} {
		t.Run(tc.what, func(t *testing.T) {
			opts := defaultOpts()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			x := newRef(t, opts)
			cred := x.top("ses_p", "local/orchestrator")
			x.top("ses_other", "local/self") // the census holds 2 before any spawn
			switch tc.cred {
			case "ok":
			case "ghost":
				cred = x.r.credentialFor("ses_ghost").Credential
			case "approval":
				cred = x.grant(cred, "local/worker-b", "0.1.0").Approval
			default:
				cred = tc.cred
			}
			before := x.r.Snapshot()
			_, err := x.r.Spawn(cred, tc.req)
			refusal(t, tc.what, err, tc.code, tc.msg)
			if after := x.r.Snapshot(); after != before {
				t.Fatalf("a refused spawn changed the state: %+v, then %+v", before, after)
			}
		})
	}
}

func TestRefereeSpawnUnresolvedAndGrant(t *testing.T) {
	t.Parallel()
	x := newRef(t, defaultOpts())
	cred := x.top("ses_p", "local/orchestrator")

	_, err := x.r.Spawn(cred, roostapi.SpawnRequest{Name: "local/worker-a", Version: "9.9.9"})
	var re *roostapi.Error
	if !errors.As(err, &re) || re.StatusCode != 500 || !strings.HasPrefix(re.Message, "capsule 'local/worker-a@9.9.9' could not be resolved from the registry: ") {
		t.Fatalf("unresolved child: %v", err)
	}

	g := x.grant(cred, "local/worker-a", "0.1.0")
	if g.Name != "local/worker-a" || g.Version != "0.1.0" || g.SHA256 != x.fx.workerSHA ||
		g.ExpiresAtMS != x.clk.now().Add(60*time.Second).UnixMilli() || !strings.HasPrefix(g.Approval, approvalPrefix) {
		t.Fatalf("grant: %+v", g)
	}
	st, err := x.r.Status("ses_p")
	if err != nil || st != (roostapi.StatusResponse{Status: "running", DepthRemaining: 3, LiveChildren: 1, LiveCapsules: 2}) {
		t.Fatalf("status after grant: %+v %v", st, err)
	}
	// The grant's reservation is given back at its expiry, with no request
	// in between but the read.
	x.clk.advance(60 * time.Second)
	if st, _ := x.r.Status("ses_p"); st.LiveChildren != 0 || st.LiveCapsules != 1 {
		t.Fatalf("status after expiry: %+v", st)
	}
}

func TestRefereeRegisterTopLevel(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", 10<<10)
	for _, tc := range []struct {
		what string
		req  roostapi.RegisterRequest
		code int
		msg  string
	}{
		{"empty session_id", roostapi.RegisterRequest{Name: "local/orchestrator", Version: "0.1.0"}, 400, msgSessionIDEmpty},
		{"session_id too long", roostapi.RegisterRequest{SessionID: long, Name: "local/orchestrator", Version: "0.1.0"}, 400,
			msgSessionIDTooLong(credentialLen(long), maxCredentialLen)},
		{"bare name", roostapi.RegisterRequest{SessionID: "ses_x", Name: "orchestrator", Version: "0.1.0"}, 400, msgNotFullName("orchestrator")},
		{"not in --spawn-allow, published", roostapi.RegisterRequest{SessionID: "ses_x", Name: "local/worker-a", Version: "0.1.0"}, 403, msgNotInSpawnAllow("local/worker-a")},
		{"not in --spawn-allow, unpublished", roostapi.RegisterRequest{SessionID: "ses_x", Name: "local/nowhere", Version: "0.1.0"}, 403, msgNotInSpawnAllow("local/nowhere")},
		{"id taken", roostapi.RegisterRequest{SessionID: "ses_p", Name: "local/self", Version: "0.1.0"}, 403, msgIdentity},
	} {
		t.Run(tc.what, func(t *testing.T) {
			x := newRef(t, defaultOpts())
			x.top("ses_p", "local/orchestrator")
			_, err := x.r.RegisterTopLevel(tc.req, noPeer)
			refusal(t, tc.what, err, tc.code, tc.msg)
			if s := x.r.Snapshot(); s.Running != 1 {
				t.Fatalf("a refused registration changed the state: %+v", s)
			}
		})
	}

	x := newRef(t, Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 0})
	_, err := x.r.RegisterTopLevel(roostapi.RegisterRequest{SessionID: "ses_m", Name: "local/missing", Version: "0.1.0"}, noPeer)
	var re *roostapi.Error
	if !errors.As(err, &re) || re.StatusCode != 500 {
		t.Fatalf("allowed but unpublished: %v", err)
	}
	// The ceiling never refuses a top-level registration.
	x.top("ses_a", "local/orchestrator")
	if st, _ := x.r.Status("ses_a"); st != (roostapi.StatusResponse{Status: "running", DepthRemaining: 3, LiveCapsules: 1}) {
		t.Fatalf("top-level status: %+v", st)
	}
}

func TestRefereeRegisterApproved(t *testing.T) {
	t.Parallel()
	child := func(id, name, version string) roostapi.RegisterRequest {
		return roostapi.RegisterRequest{SessionID: id, Name: name, Version: version}
	}
	for _, tc := range []struct {
		what string
		// before runs after the grant; it may change the world.
		before func(x *refT, cred, appr string)
		tok    func(cred, appr string) string
		req    roostapi.RegisterRequest
		code   int
		msg    string
		// then is what re-presenting the same approval for the right
		// artifact answers afterwards ("" = it is redeemable).
		then string
	}{
		{"bad fields before a bad approval", nil, func(_, _ string) string { return "x" },
			child("", "local/worker-a", "0.1.0"), 400, msgSessionIDEmpty, ""},
		{"garbage", nil, func(_, _ string) string { return "msa1.garbage" },
			child("ses_c", "local/worker-a", "0.1.0"), 403, msgIdentity, ""},
		{"empty", nil, func(_, _ string) string { return "" },
			child("ses_c", "local/worker-a", "0.1.0"), 403, msgIdentity, ""},
		{"credential as approval", nil, func(cred, _ string) string { return cred },
			child("ses_c", "local/worker-a", "0.1.0"), 403, msgIdentity, ""},
		{"expired", func(x *refT, _, _ string) { x.clk.advance(60 * time.Second) }, nil,
			child("ses_c", "local/worker-a", "0.1.0"), 403, msgApprovalExpired, msgApprovalExpired},
		{"just before expiry", func(x *refT, _, _ string) { x.clk.advance(60*time.Second - time.Millisecond) }, nil,
			child("ses_c", "local/worker-a", "0.1.0"), 0, "", msgApprovalReplayed},
		{"other version: spent", nil, nil,
			child("ses_c", "local/worker-a", "0.2.0"), 403, msgApprovalCoordinates("local/worker-a@0.1.0", "local/worker-a@0.2.0"), msgApprovalReplayed},
		{"other name: spent", nil, nil,
			child("ses_c", "local/worker-b", "0.1.0"), 403, msgApprovalCoordinates("local/worker-a@0.1.0", "local/worker-b@0.1.0"), msgApprovalReplayed},
		{"id taken: spent", nil, nil,
			child("ses_p", "local/worker-a", "0.1.0"), 403, msgIdentity, msgApprovalReplayed},
		{"parent ended", func(x *refT, cred, _ string) {
			if err := x.r.Deregister(cred, roostapi.DeregisterRequest{Outcome: "complete"}); err != nil {
				x.t.Fatal(err)
			}
		}, nil, child("ses_c", "local/worker-a", "0.1.0"), 403, msgIdentity, msgIdentity},
		{"unresolved: untouched", nil, nil,
			child("ses_c", "local/worker-a", "9.9.9"), 500, "", ""},
		{"redeemed", nil, nil, child("ses_c", "local/worker-a", "0.1.0"), 0, "", msgApprovalReplayed},
	} {
		t.Run(tc.what, func(t *testing.T) {
			x := newRef(t, defaultOpts())
			cred := x.top("ses_p", "local/orchestrator")
			appr := x.grant(cred, "local/worker-a", "0.1.0").Approval
			if tc.before != nil {
				tc.before(x, cred, appr)
			}
			tok := appr
			if tc.tok != nil {
				tok = tc.tok(cred, appr)
			}
			resp, err := x.r.RegisterApproved(tc.req, tok, noPeer)
			switch {
			case tc.code == 0:
				if err != nil || !strings.HasPrefix(resp.Credential, credentialPrefix) {
					t.Fatalf("redeem: %+v %v", resp, err)
				}
				// The depth is the one sealed in the approval, and the
				// reservation became the child: the parent's figure and the
				// census are unchanged.
				if st, _ := x.r.Status("ses_c"); st != (roostapi.StatusResponse{Status: "running", DepthRemaining: 2, LiveCapsules: 2}) {
					t.Fatalf("child status: %+v", st)
				}
				if st, _ := x.r.Status("ses_p"); st.LiveChildren != 1 {
					t.Fatalf("parent status: %+v", st)
				}
			case tc.code == 500:
				var re *roostapi.Error
				if !errors.As(err, &re) || re.StatusCode != 500 {
					t.Fatalf("got %v, want a 500", err)
				}
			default:
				refusal(t, tc.what, err, tc.code, tc.msg)
			}
			_, err = x.r.RegisterApproved(child("ses_c2", "local/worker-a", "0.1.0"), appr, noPeer)
			if tc.then == "" {
				if err != nil {
					t.Fatalf("re-presented: %v, want it redeemable", err)
				}
				return
			}
			refusal(t, tc.what+", re-presented", err, 403, tc.then)
		})
	}
}

// An approval presented after its artifact was republished with other bytes
// is refused by hash, and spent.
func TestRefereeRegisterApprovedOtherBytes(t *testing.T) {
	t.Parallel()
	x := newRef(t, defaultOpts())
	cred := x.top("ses_p", "local/orchestrator")
	g := x.grant(cred, "local/worker-b", "0.1.0")
	sha := publish(t, x.fx.reg, "local/worker-b", "0.1.0", "", 'x')
	_, err := x.r.RegisterApproved(roostapi.RegisterRequest{SessionID: "ses_c", Name: "local/worker-b", Version: "0.1.0"}, g.Approval, noPeer)
	refusal(t, "other bytes", err, 403, msgApprovalBytes("local/worker-b@0.1.0", g.SHA256, sha))
	// Spent, but its slot is kept until its 60 seconds pass.
	if st, _ := x.r.Status("ses_p"); st.LiveChildren != 1 || st.LiveCapsules != 2 {
		t.Fatalf("after a spent approval: %+v", st)
	}
	x.clk.advance(time.Minute)
	if st, _ := x.r.Status("ses_p"); st.LiveChildren != 0 || st.LiveCapsules != 1 {
		t.Fatalf("after its expiry: %+v", st)
	}
}

func TestRefereeDeregister(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what    string
		cred    string // "ok" = the session's own
		outcome string
		code    int
		msg     string
	}{
		{"outcome before identity", "", "done", 400, msgOutcome},
		{"empty outcome", "ok", "", 400, msgOutcome},
		{"no credential", "", "complete", 403, msgIdentity},
		{"garbage", "msc1.a.b", "failed", 403, msgIdentity},
		{"complete", "ok", "complete", 0, ""},
		{"failed", "ok", "failed", 0, ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			x := newRef(t, defaultOpts())
			cred := x.top("ses_p", "local/orchestrator")
			x.grant(cred, "local/worker-a", "0.1.0")
			tok := tc.cred
			if tok == "ok" {
				tok = cred
			}
			err := x.r.Deregister(tok, roostapi.DeregisterRequest{Outcome: tc.outcome})
			if tc.code != 0 {
				refusal(t, tc.what, err, tc.code, tc.msg)
				if st, _ := x.r.Status("ses_p"); st.Status != "running" {
					t.Fatalf("refused deregister retired the session: %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Retired, its reservation released; the record stays.
			if st, _ := x.r.Status("ses_p"); st != (roostapi.StatusResponse{Status: tc.outcome, DepthRemaining: 3}) {
				t.Fatalf("after deregister: %+v", st)
			}
			refusal(t, "twice", x.r.Deregister(cred, roostapi.DeregisterRequest{Outcome: tc.outcome}), 403, msgIdentity)
			_, err = x.r.Spawn(cred, roostapi.SpawnRequest{Name: "local/worker-a", Version: "0.1.0"})
			refusal(t, "spawn after", err, 403, msgIdentity)
		})
	}
}

func TestRefereeStatusUnknown(t *testing.T) {
	t.Parallel()
	x := newRef(t, defaultOpts())
	for _, id := range []string{"", "ses_nobody"} {
		_, err := x.r.Status(id)
		refusal(t, "status "+id, err, 404, msgSessionNotFound)
	}
}
