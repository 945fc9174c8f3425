package roostapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxResponseBytes bounds what the client reads of an answer; the daemon's
// largest is a refusal naming two hashes, well under a kilobyte.
const maxResponseBytes = 1 << 20

// Client calls one mur-roost daemon. The zero value is not usable: BaseURL
// is required. A Client holds no token; each call is given the one it sends.
// It is safe for concurrent use when HTTPClient is.
type Client struct {
	// BaseURL is the daemon's address, e.g. "http://127.0.0.1:7700".
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Grant is a POST /spawn approval and the artifact it names.
type Grant struct {
	Approval Approval
	Name     string
	Version  string
	SHA256   string
	// ExpiresAt is the approval's expiry, 60 seconds after the grant.
	ExpiresAt time.Time
}

// Health asks GET /health; nil means the daemon is listening.
func (c *Client) Health(ctx context.Context) error {
	var out struct{}
	return c.do(ctx, http.MethodGet, PathHealth, nil, nil, &out)
}

// Register announces a session and returns its credential. The zero
// approval takes the top-level path (gated by the daemon's --spawn-allow);
// any other is sent in HeaderApproval, even when empty.
func (c *Client) Register(ctx context.Context, req RegisterRequest, approval Approval) (Credential, error) {
	var h http.Header
	if !approval.IsZero() {
		h = http.Header{HeaderApproval: {approval.Reveal()}}
	}
	var out RegisterResponse
	if err := c.do(ctx, http.MethodPost, PathRegister, h, req, &out); err != nil {
		return Credential{}, err
	}
	return CredentialOf(out.Credential), nil
}

// Spawn asks permission for the session holding cred to launch req's
// capsule. A refusal (allow list, a bound, the envelope) is an *Error.
func (c *Client) Spawn(ctx context.Context, cred Credential, req SpawnRequest) (Grant, error) {
	var out SpawnResponse
	if err := c.do(ctx, http.MethodPost, PathSpawn, credHeader(cred), req, &out); err != nil {
		return Grant{}, err
	}
	return Grant{
		Approval:  ApprovalOf(out.Approval),
		Name:      out.Name,
		Version:   out.Version,
		SHA256:    out.SHA256,
		ExpiresAt: time.UnixMilli(out.ExpiresAtMS),
	}, nil
}

// Deregister reports that the session holding cred has ended with outcome
// (StatusComplete or StatusFailed). The specification makes the call best
// effort on the runtime's side; whether an error fails anything is the
// caller's decision.
func (c *Client) Deregister(ctx context.Context, cred Credential, outcome string) error {
	var out struct{}
	return c.do(ctx, http.MethodPost, PathDeregister, credHeader(cred), DeregisterRequest{Outcome: outcome}, &out)
}

// Status polls a registered session. An unknown id is an *Error with
// StatusCode 404.
func (c *Client) Status(ctx context.Context, sessionID string) (StatusResponse, error) {
	var out StatusResponse
	err := c.do(ctx, http.MethodGet, PathStatus+url.PathEscape(sessionID), nil, nil, &out)
	return out, err
}

func credHeader(cred Credential) http.Header {
	return http.Header{HeaderCredential: {cred.Reveal()}}
}

// do sends one request and decodes a 200 into out. Errors name the method
// and path, never a header: the tokens stay out of them.
func (c *Client) do(ctx context.Context, method, path string, h http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("mur-roost %s %s: encode the body: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("mur-roost %s %s: %w", method, path, err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("mur-roost %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("mur-roost %s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return refusal(resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("mur-roost %s %s: the 200 answer does not decode: %w", method, path, err)
	}
	return nil
}

// refusal reads {"error": "..."}; any other body is kept as the message, so
// a proxy's page or a truncated answer still says what came back.
func refusal(code int, raw []byte) *Error {
	var e ErrorResponse
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return &Error{StatusCode: code, Message: e.Error}
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	return &Error{StatusCode: code, Message: msg}
}
