//go:build wasip1

package wasihttp

import (
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/guest/httpcore"
)

// Transport returns a net/http RoundTripper over wasi:http, so a
// component makes requests as Go code does anywhere:
//
//	c := &http.Client{Transport: wasihttp.Transport()}
//	resp, err := c.Get("https://api.example.com/v1/items")
//
// The host follows no redirects (http.Client does, each one a new request
// the grant must cover) and bounds every request by the component call.
// A refused request returns an *Error.
func Transport() http.RoundTripper { return transport{} }

type transport struct{}

func (transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	var header [][2]string
	for k, vs := range req.Header {
		for _, v := range vs {
			header = append(header, [2]string{strings.ToLower(k), v})
		}
	}
	r := &httpcore.Request{Method: req.Method, Scheme: req.URL.Scheme, Authority: req.URL.Host,
		Path: req.URL.RequestURI(), Header: header, ContentLength: req.ContentLength}
	if req.Body != nil && req.Body != http.NoBody {
		r.Body = req.Body
	}
	if len(req.Trailer) > 0 {
		// Read once the body is written: a request's trailer values may be
		// set while its body is read.
		r.Trailer = func() [][2]string {
			var t [][2]string
			for k, vs := range req.Trailer {
				for _, v := range vs {
					t = append(t, [2]string{strings.ToLower(k), v})
				}
			}
			return t
		}
	}
	resp, err := r.Send()
	if err != nil {
		return nil, err
	}
	out := &http.Response{
		StatusCode: resp.Status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        header2(resp.Header),
		Request:       req,
		ContentLength: resp.ContentLength,
		Trailer:       http.Header{},
	}
	out.Status = strconv.Itoa(out.StatusCode) + " " + http.StatusText(out.StatusCode)
	out.Body = &body{resp: resp, trailer: out.Trailer}
	return out, nil
}

func header2(fields [][2]string) http.Header {
	h := http.Header{}
	for _, f := range fields {
		h.Add(f[0], f[1])
	}
	return h
}

// body is the response's httpcore body; at its end the trailers go into
// the http.Response's Trailer, as net/http's own bodies do.
type body struct {
	resp    *httpcore.Response
	trailer http.Header
	copied  bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.resp.Body.Read(p)
	if err != nil {
		b.end()
	}
	return n, err
}

// WriteTo hands w each read's bytes as they come (io.Copy uses it), without
// the copy into the caller's buffer Read makes.
func (b *body) WriteTo(w io.Writer) (int64, error) {
	n, err := b.resp.Body.WriteTo(w)
	b.end()
	return n, err
}

func (b *body) end() {
	if b.copied {
		return
	}
	b.copied = true
	for _, f := range b.resp.Trailer() {
		b.trailer.Add(f[0], f[1])
	}
}

func (b *body) Close() error { return b.resp.Body.Close() }

// client follows no redirects, as the host does not: a 3xx is the answer.
var client = &http.Client{
	Transport:     Transport(),
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Get fetches url with the wasi:http transport, following no redirect.
func Get(url string) (*http.Response, error) { return client.Get(url) }

// Post sends body to url with the wasi:http transport, following no redirect.
func Post(url, contentType string, body io.Reader) (*http.Response, error) {
	return client.Post(url, contentType, body)
}
