package mcp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
)

// lookupIP resolves a server's host name; tlsRoots verifies its
// certificate (nil: the system roots). Tests replace both.
var (
	lookupIP = net.DefaultResolver.LookupIPAddr
	tlsRoots *x509.CertPool
)

// resolveURL resolves the host of an HTTP server's url once: the address
// (ip:port) every connection of the session then dials, so a name that
// changes its answer mid-session is never followed.
func resolveURL(ctx context.Context, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		return net.JoinHostPort(ip.String(), port), nil
	}
	addrs, err := lookupIP(ctx, host)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("resolving %s: no address", host)
	}
	return net.JoinHostPort(addrs[0].IP.String(), port), nil
}

// httpClient is the client of one HTTP server: every connection dials addr
// (the url's host resolved once; TLS still verifies the host name, against
// the system roots), no proxy, redirects never followed, the entry's
// headers on every request, every body bounded.
func httpClient(headers []manifest.Header, addr string) *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second}
	base := &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: 0, MaxIdleConns: 4,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}
	if tlsRoots != nil {
		base.TLSClientConfig = &tls.Config{RootCAs: tlsRoots}
	}
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
