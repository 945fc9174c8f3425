package mcp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
)

// httpClient is the client of one HTTP server: no proxy, redirects never
// followed, the entry's headers on every request, every body bounded.
func httpClient(headers []manifest.Header) *http.Client {
	base := &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: 0, MaxIdleConns: 4}
	return &http.Client{
		Transport: &headerTransport{base: base, headers: headers},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

type headerTransport struct {
	base    http.RoundTripper
	headers []manifest.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, h := range t.headers {
		r.Header.Set(h.Name, h.Value)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		resp.Body.Close()
		return nil, fmt.Errorf("the server answered a redirect (%d to %s), which is not followed", resp.StatusCode, clip(resp.Header.Get("Location"), 256))
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		resp.Body.Close()
		var names []string
		for _, h := range t.headers {
			names = append(names, h.Name)
		}
		e := &httpStatusError{code: resp.StatusCode, headers: strings.Join(names, ", ")}
		if e.headers == "" {
			e.headers = "none"
		}
		if strings.Contains(strings.ToLower(resp.Header.Get("WWW-Authenticate")), "bearer") {
			e.oauth = "; it asks for OAuth, which murmur does not support: put a token in mcp.headers"
		}
		return nil, e
	}
	resp.Body = &boundedBody{r: resp.Body, left: MaxMessageBytes}
	return resp, nil
}

var errBodyTooLarge = errors.New("an HTTP body passed 16 MiB")

// boundedBody fails a body past MaxMessageBytes.
type boundedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.r.Close() }
