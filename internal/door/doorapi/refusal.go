package doorapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// RefusalBody is the body of a door's HTTP refusal, sent before a request's
// body is read (docs/formations.md, an authenticated door; docs/door.md,
// the same-user rule): {"error": word, "message": sentence}.
type RefusalBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// RefusalError is a door's HTTP refusal as a caller reads it: a status
// other than 200 with a RefusalBody, e.g. 401 invalid_token. The door
// answered: a request refused so is not worth another try.
type RefusalError struct {
	StatusCode int
	RefusalBody
}

func (e *RefusalError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.StatusCode, e.RefusalBody.Error, e.Message)
}

// maxRefusalBytes bounds what is read of a non-200 answer: a refusal's
// sentence is well under it.
const maxRefusalBytes = 4 << 10

// refusalOf reads a non-200 answer's body as a refusal; nil when it is not
// one.
func refusalOf(status int, raw []byte) *RefusalError {
	var b RefusalBody
	if status == http.StatusOK || json.Unmarshal(raw, &b) != nil || b.Error == "" {
		return nil
	}
	return &RefusalError{StatusCode: status, RefusalBody: b}
}

// refusalCatcher keeps the refusal a door answers a2a-go's client with,
// which reports only "unexpected HTTP status"; the body it puts back is
// what it read (at most maxRefusalBytes).
type refusalCatcher struct {
	base http.RoundTripper
	got  *RefusalError
}

func (rc *refusalCatcher) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rc.base.RoundTrip(req)
	if err != nil || resp.StatusCode == http.StatusOK {
		return resp, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBytes))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	rc.got = refusalOf(resp.StatusCode, raw)
	return resp, nil
}
