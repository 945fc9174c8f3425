package wasihttp

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// FuzzHTTPRequest: the host side of the wasi:http inputs a guest controls
// (method, authority, path with query, a header name and value). The checks
// never panic; what they accept net/http writes as a request that parses
// back to the same method, target, host and header; an accepted authority
// never carries userinfo. Seeds are in testdata/fuzz/FuzzHTTPRequest.
func FuzzHTTPRequest(f *testing.F) {
	f.Add("GET", "example.com", "/a?b=c", "x-key", "v")
	f.Add("POST", "127.0.0.1:8080", "/", "content-type", "application/json")
	f.Add("PATCH", "[::1]:443", "/%41", "x-a", "  spaced  ")
	f.Fuzz(func(t *testing.T, method, authority, path, name, value string) {
		tok, auth, p := h1.ValidToken(method), h1.ValidAuthority(authority), h1.ValidPath(path)
		fname, fval := h1.ValidFieldName(name), h1.ValidFieldValue(value)
		_ = h1.ForbiddenField(name) // must not panic on any input
		_ = h1.ValidScheme(method)
		if auth {
			if strings.Contains(authority, "@") {
				t.Fatalf("authority %q with userinfo accepted", authority)
			}
			u, err := url.Parse("http://" + authority + "/")
			if err != nil || u.Host != authority || u.User != nil {
				t.Fatalf("accepted authority %q parses as %v (%v)", authority, u, err)
			}
		}
		if !tok || !auth || !p || !fname || !fval || h1.ForbiddenField(name) {
			return
		}
		send := Request{Method: method, Scheme: "http", Authority: authority, PathWithQuery: path,
			Headers: [][2]string{{name, value}}}
		hreq, code := buildRequest(context.Background(), send, nil)
		if code != nil {
			if !strings.EqualFold(name, "content-length") {
				t.Fatalf("valid request refused: %v", *code)
			}
			return
		}
		var buf bytes.Buffer
		if err := hreq.Write(&buf); err != nil {
			t.Fatalf("net/http cannot write the accepted request %+v: %v", send, err)
		}
		back, err := http.ReadRequest(bufio.NewReader(&buf))
		if err != nil {
			t.Fatalf("the written request does not parse: %v\n%q", err, buf.String())
		}
		if back.Method != method || back.RequestURI != path || back.Host != authority {
			t.Fatalf("round trip: %s %s host %s; sent %s %s host %s", back.Method, back.RequestURI, back.Host, method, path, authority)
		}
		if !strings.EqualFold(name, "content-length") && back.Header.Get(name) != strings.Trim(value, " \t") {
			t.Fatalf("header %q: sent %q, read back %q", name, value, back.Header.Get(name))
		}
	})
}
