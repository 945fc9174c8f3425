package roost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// The typed client against the real handler on a loopback server: every
// endpoint's success and refusal, decoded into the wire types.

func newClientDaemon(t *testing.T, opts Options) (*roostapi.Client, *inproc) {
	t.Helper()
	p := newInproc(t, opts)
	return &roostapi.Client{BaseURL: p.base, HTTPClient: p.hc}, p
}

func apiError(t *testing.T, what string, err error, code int, msg string) {
	t.Helper()
	var re *roostapi.Error
	if !errors.As(err, &re) || re.StatusCode != code || re.Message != msg {
		t.Fatalf("%s: got %v\nwant *roostapi.Error %d %q", what, err, code, msg)
	}
}

func TestClientWalk(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	c, p := newClientDaemon(t, Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16,
		SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg)})
	ctx := context.Background()

	if err := c.Health(ctx); err != nil {
		t.Fatalf("health: %v", err)
	}
	_, err := c.Register(ctx, roostapi.RegisterRequest{SessionID: "ses_w", Name: "local/worker-a", Version: "0.1.0"}, roostapi.Approval{})
	apiError(t, "register outside --spawn-allow", err, 403, msgNotInSpawnAllow("local/worker-a"))

	cred, err := c.Register(ctx, roostapi.RegisterRequest{SessionID: "ses_p", Name: "local/orchestrator", Version: "0.1.0"}, roostapi.Approval{})
	if err != nil || !strings.HasPrefix(cred.Reveal(), "msc1.") {
		t.Fatalf("register: %v", err)
	}
	_, err = c.Spawn(ctx, cred, roostapi.SpawnRequest{Name: "local/nowhere", Version: "0.1.0"})
	apiError(t, "spawn outside the allow list", err, 403, msgNotInParentAllow("local/nowhere"))
	_, err = c.Spawn(ctx, roostapi.Credential{}, roostapi.SpawnRequest{Name: "local/worker-a", Version: "0.1.0"})
	apiError(t, "spawn with no credential", err, 403, msgIdentity)

	before := time.Now()
	g, err := c.Spawn(ctx, cred, roostapi.SpawnRequest{Name: "local/worker-a", Version: "0.1.0"})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	if g.Name != "local/worker-a" || g.Version != "0.1.0" || g.SHA256 != fx.workerSHA || !strings.HasPrefix(g.Approval.Reveal(), "msa1.") ||
		g.ExpiresAt.Before(before.Add(59*time.Second)) || g.ExpiresAt.After(time.Now().Add(61*time.Second)) {
		t.Fatalf("grant: %+v (expires %v)", g, g.ExpiresAt)
	}

	// An approval header that is present but empty is the approval path.
	_, err = c.Register(ctx, roostapi.RegisterRequest{SessionID: "ses_c", Name: "local/worker-a", Version: "0.1.0"}, roostapi.ApprovalOf(""))
	apiError(t, "register with an empty approval", err, 403, msgIdentity)

	childCred, err := c.Register(ctx, roostapi.RegisterRequest{SessionID: "ses_c", Name: "local/worker-a", Version: "0.1.0"}, g.Approval)
	if err != nil {
		t.Fatalf("register the child: %v", err)
	}
	_, err = c.Register(ctx, roostapi.RegisterRequest{SessionID: "ses_c2", Name: "local/worker-a", Version: "0.1.0"}, g.Approval)
	apiError(t, "replay", err, 403, msgApprovalReplayed)

	st, err := c.Status(ctx, "ses_p")
	if err != nil || st != (roostapi.StatusResponse{Status: "running", DepthRemaining: 3, LiveChildren: 1, LiveCapsules: 2}) {
		t.Fatalf("parent status: %+v %v", st, err)
	}
	err = c.Deregister(ctx, childCred, "done")
	apiError(t, "deregister with a bad outcome", err, 400, msgOutcome)
	if err := c.Deregister(ctx, childCred, roostapi.StatusComplete); err != nil {
		t.Fatalf("deregister: %v", err)
	}
	apiError(t, "deregister twice", c.Deregister(ctx, childCred, roostapi.StatusComplete), 403, msgIdentity)
	if st, err := c.Status(ctx, "ses_c"); err != nil || st.Status != "complete" || st.DepthRemaining != 2 {
		t.Fatalf("child status: %+v %v", st, err)
	}
	_, err = c.Status(ctx, "ses_nobody")
	apiError(t, "unknown session", err, 404, msgSessionNotFound)
	checkState(t, p.srv)
}

// A session id is one path segment whatever it holds: the client escapes it
// and the daemon answers for the id itself.
func TestClientStatusEscapesTheID(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	c, _ := newClientDaemon(t, Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16,
		SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg)})
	ctx := context.Background()
	for _, id := range []string{"ses a/b?c#d", "ses_%2F", "ses_ü"} {
		if _, err := c.Register(ctx, roostapi.RegisterRequest{SessionID: id, Name: "local/orchestrator", Version: "0.1.0"}, roostapi.Approval{}); err != nil {
			t.Fatalf("register %q: %v", id, err)
		}
		if st, err := c.Status(ctx, id); err != nil || st.Status != "running" {
			t.Fatalf("status %q: %+v %v", id, st, err)
		}
	}
}

func TestClientTransportAndContext(t *testing.T) {
	t.Parallel()
	cred := roostapi.CredentialOf("msc1.SECRET-CREDENTIAL.sig")

	// A daemon that is gone: the error names the call, never the token.
	hs := httptest.NewServer(http.NotFoundHandler())
	gone := &roostapi.Client{BaseURL: hs.URL, HTTPClient: hs.Client()}
	hs.Close()
	err := gone.Deregister(context.Background(), cred, roostapi.StatusComplete)
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "POST /deregister") {
		t.Fatalf("transport error: %v", err)
	}

	// A cancelled context ends the call with the context's error.
	block := make(chan struct{})
	hs2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); hs2.Close() })
	c := &roostapi.Client{BaseURL: hs2.URL, HTTPClient: hs2.Client()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Spawn(ctx, cred, roostapi.SpawnRequest{Name: "local/a", Version: "1"})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled spawn: %v", err)
	}

	// A refusal that is not {"error": ...} keeps the body as its message.
	hs3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream gone", http.StatusBadGateway)
	}))
	t.Cleanup(hs3.Close)
	c3 := &roostapi.Client{BaseURL: hs3.URL + "/", HTTPClient: hs3.Client()}
	apiError(t, "non-JSON refusal", c3.Health(context.Background()), 502, "upstream gone")
}

// The tokens print, log and marshal as "[redacted]" wherever they sit.
func TestClientTokensAreRedacted(t *testing.T) {
	t.Parallel()
	const tok = "msc1.SECRET-TOKEN-TEXT.sig"
	cred := roostapi.CredentialOf(tok)
	g := roostapi.Grant{Approval: roostapi.ApprovalOf(tok), Name: "local/a"}
	type holder struct {
		cred roostapi.Credential // unexported: fmt cannot call its methods
		G    roostapi.Grant
	}
	h := holder{cred: cred, G: g}

	var out bytes.Buffer
	for _, f := range []string{"%v", "%s", "%q", "%+v", "%#v", "%x", "%d"} {
		fmt.Fprintf(&out, f+"\n", cred)
		fmt.Fprintf(&out, f+"\n", g)
		fmt.Fprintf(&out, f+"\n", h)
		fmt.Fprintf(&out, f+"\n", &h)
	}
	fmt.Fprintln(&out, cred, g.Approval, h)
	lg := slog.New(slog.NewJSONHandler(&out, nil))
	lg.Info("m", "cred", cred, "grant", g, "approval", g.Approval)
	slog.New(slog.NewTextHandler(&out, nil)).Info("m", "cred", cred, "grant", g)
	js, _ := json.Marshal(h)
	out.Write(js)
	js, _ = json.Marshal(g)
	out.Write(js)
	if strings.Contains(out.String(), "SECRET") {
		t.Fatalf("a token leaked:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "[redacted]") {
		t.Fatalf("nothing redacted:\n%s", out.String())
	}
	if cred.Reveal() != tok || g.Approval.Reveal() != tok || !(roostapi.Approval{}).IsZero() || roostapi.ApprovalOf("").IsZero() {
		t.Fatal("Reveal / IsZero")
	}
}
