package doorapi

import (
	"context"
	"net/http"
	"strings"
)

// PeerPath is the door's peer file route: GET PeerPath + <handle> serves the
// one file the handle names (docs/peer-files.md). It takes no token.
const PeerPath = "/resources/peer/"

// HeaderHandleID names the handle a peer file response answers (its
// handle_id: never the handle).
const HeaderHandleID = "x-murmur-handle-id"

// PeerError is the body of a refused peer file request.
type PeerError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// GetPeerFile sends GET <base>/resources/peer/<handle> with no token and
// no redirect followed, and returns the response for the caller to read
// (and close). base is the sharer's capsule URL ("http://127.0.0.1:PORT").
func (c *Client) GetPeerFile(ctx context.Context, base, handle string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+PeerPath+handle, nil)
	if err != nil {
		return nil, err
	}
	hc := *c.http()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return hc.Do(req)
}
