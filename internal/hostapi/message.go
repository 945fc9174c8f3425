package hostapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// newHTTPClient is message/send's client: no proxy (the grant is checked
// against the host actually dialled) and no redirects (one could lead to a
// host the grant does not cover). Time is bounded by the call's context.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          16,
			IdleConnTimeout:       30 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 0,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// PeerEndpoint checks a peer URL the way message/send does and returns the
// endpoint it posts to and the network entry (scheme://host:port) the grant
// must cover. A capsule URL as mur records it ("127.0.0.1:41234") has no
// scheme: it is http.
func PeerEndpoint(peer string) (endpoint, entry string, err error) {
	p := strings.TrimSpace(peer)
	if p == "" {
		return "", "", errors.New("the peer URL is empty")
	}
	if !strings.Contains(p, "://") {
		p = "http://" + p
	}
	u, err := url.Parse(p)
	if err != nil {
		return "", "", errors.New("it is not a URL")
	}
	switch u.Scheme {
	case "http", "https":
	default:
		return "", "", errors.New("scheme " + u.Scheme + " is not http or https")
	}
	if u.User != nil {
		return "", "", errors.New("a peer URL carries no user information")
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", "", errors.New("no host")
	}
	if u.Fragment != "" {
		return "", "", errors.New("a peer URL has no fragment")
	}
	entry = u.Scheme + "://" + u.Host
	if _, err := manifest.ParseNetEntry(entry); err != nil {
		return "", "", err
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), entry, nil
}

// Send implements murmur:message/send: an A2A 1.0 SendMessage (JSON-RPC,
// a2a-go's client) to a peer whose host capabilities.network.allow covers,
// asking for the peer's immediate answer (returnImmediately): the task id,
// context id and task state (TASK_STATE_*). A peer that answers with a
// message instead of a task has finished the exchange: its state is
// TASK_STATE_COMPLETED and its task id whatever the message names (often
// ""). Every answered send leaves one a2a_send line; a refused or failed
// send answers err and leaves none (nothing was exchanged).
//
// A formation member's callee is reached at its virtual address
// (http://<callee>.formation.invalid, formation.Callees.Route): the send
// goes to the callee's door with the edge's token and origin peer, no
// network.allow entry needed; any other address under formation.invalid is
// refused (E-RUN-070) before any connection. The a2a_send line names the
// virtual URL as given.
func (s *Imports) Send(ctx context.Context, peerURL string, m wit.Message) (wit.TaskResult, error) {
	endpoint, entry, err := PeerEndpoint(peerURL)
	if err != nil {
		return wit.TaskResult{}, diag.New("E-RUN-070", "message/send to %q refused: %v", clip(peerURL), err).
			WithHint("give the peer's capsule URL: http://host:port or https://host[:port]")
	}
	door := doorapi.Task{ReturnImmediately: true}
	token := ""
	scheme, authority, _ := strings.Cut(entry, "://")
	target, err := s.cfg.Session.Callees.Route(ctx, scheme, authority)
	var refused *formation.RefusedError
	switch {
	case errors.As(err, &refused):
		return wit.TaskResult{}, diag.New("E-RUN-070", "message/send to %s refused: %v", clip(peerURL), err).
			WithHint("a formation member reaches its callees at the addresses in MURMUR_FORMATION_PEERS")
	case err != nil:
		return wit.TaskResult{}, diag.Wrap(err, "E-RUN-071", "message/send to %s failed", clip(peerURL)).
			WithHint("the callee's door address comes from the formation's launcher once every peer is up")
	case target != nil:
		// The path and query as given, on the callee's door.
		endpoint = target.Scheme + "://" + target.Authority + endpoint[len(entry):]
		door.Origin, token = doorapi.OriginPeer, target.Token
	case !manifest.NetListCovers(s.grants.Capsule.NetworkAllow, entry):
		return wit.TaskResult{}, diag.New("E-RUN-070", "message/send to %s refused: capabilities.network.allow does not cover %s", clip(peerURL), clip(entry)).
			WithHint("add %s (or its host) to capabilities.network.allow in murmur.yaml", entry)
	}
	msgID := m.MessageID
	if msgID == "" {
		msgID = a2a.NewMessageID()
	}
	msg := &a2a.Message{ID: msgID, Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart(m.Text)}}
	if m.ContextID != nil {
		msg.ContextID = *m.ContextID
	}
	door.Message = msg
	hc, over := capResponses(s.http, MaxResponseBytes)
	client := doorapi.NewClient(endpoint, hc)
	client.Token = token
	res, err := client.SendTask(ctx, door)
	if over.Load() {
		// Whatever error the decoder made of the cut body, the cause is the cap.
		return wit.TaskResult{}, diag.New("E-RUN-072", "message/send to %s stopped: the peer's answer is larger than %d MiB, message/send's cap on a response body", endpoint, MaxResponseBytes>>20).
			WithHint("the peer should answer SendMessage with a task or a short message; its results belong in artifacts")
	}
	if err != nil {
		return wit.TaskResult{}, diag.Wrap(err, "E-RUN-071", "message/send to %s failed", endpoint).
			WithHint("check that the peer capsule is running (mur ps) and serves A2A 1.0 at that URL")
	}
	var tr wit.TaskResult
	switch r := res.(type) {
	case *a2a.Task:
		tr = wit.TaskResult{TaskID: string(r.ID), ContextID: r.ContextID, State: r.Status.State.String()}
	case *a2a.Message:
		tr = wit.TaskResult{TaskID: string(r.TaskID), ContextID: r.ContextID, State: a2a.TaskStateCompleted.String()}
	default:
		return wit.TaskResult{}, diag.New("E-RUN-071", "message/send to %s: the peer answered with %T, neither a task nor a message", endpoint, res)
	}
	s.recorder().A2ASend(trace.A2ASend{PeerURL: peerURL, MessageID: msgID, TaskID: tr.TaskID, ContextID: tr.ContextID, State: tr.State})
	return tr, nil
}

// MaxResponseBytes caps the body of a peer's answer to message/send: past
// it the call ends with E-RUN-072 instead of holding the answer in memory
// (a host call is stopped with an error rather than consume host memory
// without bound). A task result carries ids and a state, so 16 MiB
// is far beyond any honest answer.
const MaxResponseBytes = 16 << 20

// capResponses returns a client like c whose response bodies end with an
// error once they pass max bytes; over reports whether one did. The cut is
// made on the bytes as read, so a peer streaming without end costs at most
// max bytes of buffering.
func capResponses(c *http.Client, max int64) (*http.Client, *atomic.Bool) {
	over := new(atomic.Bool)
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc := *c
	cc.Transport = cappedTransport{base: base, max: max, over: over}
	return &cc, over
}

type cappedTransport struct {
	base http.RoundTripper
	max  int64
	over *atomic.Bool
}

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		t.over.Store(true)
		return nil, errTooLarge(t.max)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.max, max: t.max, over: t.over}
	return resp, nil
}

func errTooLarge(max int64) error {
	return fmt.Errorf("the response body is larger than %d bytes", max)
}

// cappedBody reads at most max bytes of rc; the byte past them is an error.
type cappedBody struct {
	rc   io.ReadCloser
	left int64 // bytes still allowed
	max  int64
	over *atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge(b.max)
	}
	// Read one byte beyond what is allowed, to tell "exactly max" from "more".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.over.Store(true)
		return n + int(b.left), errTooLarge(b.max)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
