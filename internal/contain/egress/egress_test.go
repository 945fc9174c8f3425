package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/contain/egress"
)

// upstream is a real HTTP server on host loopback that echoes the Host it
// was sent.
func upstream(t testing.TB) (srv *httptest.Server, port string) {
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream host=%s path=%s", r.Host, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

// proxy serves p on a loopback listener, as a handed-out namespace
// listener would be served.
func proxy(t testing.TB, p *egress.Proxy) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	return ln.Addr().String()
}

// ask sends one raw request to the proxy and returns the status code and
// body; for a CONNECT that succeeds it then sends a GET through the tunnel
// and returns that answer.
func ask(t testing.TB, proxyAddr, raw string, connect bool) (int, string) {
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: map[bool]string{true: "CONNECT", false: "GET"}[connect]})
	if err != nil {
		t.Fatal(err)
	}
	if connect && resp.StatusCode == 200 {
		if _, err := io.WriteString(c, "GET /tunnel HTTP/1.1\r\nHost: inner\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

func get(target, hostHeader string) string {
	return fmt.Sprintf("GET http://%s/p HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, hostHeader)
}

func connect(target string) string {
	return fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
}

func TestCoverage(t *testing.T) {
	_, port := upstream(t)
	hosts := map[string]string{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}
	cases := []struct {
		name    string
		allow   []string
		raw     string
		connect bool
		want    int
	}{
		{"bare host: plain HTTP on any port", []string{"allowed.test"}, get("allowed.test:"+port, "allowed.test"), false, 200},
		{"bare host: CONNECT on any port", []string{"allowed.test"}, connect("allowed.test:" + port), true, 200},
		{"bare host covers that host only", []string{"allowed.test"}, get("other.test:"+port, "other.test"), false, 403},
		{"bare host is not a subdomain wildcard", []string{"test"}, get("allowed.test:"+port, "allowed.test"), false, 403},
		{"http:// entry: plain HTTP to its port", []string{"http://allowed.test:" + port}, get("allowed.test:"+port, "x"), false, 200},
		{"http:// entry: not CONNECT", []string{"http://allowed.test:" + port}, connect("allowed.test:" + port), true, 403},
		{"http:// entry: not another port", []string{"http://allowed.test:1"}, get("allowed.test:"+port, "x"), false, 403},
		{"http:// entry without port: port 80 only", []string{"http://allowed.test"}, get("allowed.test:"+port, "x"), false, 403},
		{"https:// entry: CONNECT to its port", []string{"https://allowed.test:" + port}, connect("allowed.test:" + port), true, 200},
		{"https:// entry: not plain HTTP", []string{"https://allowed.test:" + port}, get("allowed.test:"+port, "x"), false, 403},
		{"https:// entry without port: 443 only", []string{"https://allowed.test"}, connect("allowed.test:" + port), true, 403},
		{"bare host:port: both on that port", []string{"allowed.test:" + port}, connect("allowed.test:" + port), true, 200},
		{"an IP literal entry", []string{"127.0.0.1"}, get("127.0.0.1:"+port, "127.0.0.1"), false, 200},
		{"names compare case-insensitively", []string{"allowed.test"}, get("ALLOWED.test:"+port, "x"), false, 200},
		{"nothing allowed", nil, connect("allowed.test:" + port), true, 403},
		{"a CONNECT without a port", []string{"allowed.test"}, connect("allowed.test"), true, 403},
		// Coverage is on names: an address a covered name resolves to is
		// not covered by it.
		{"CONNECT to the IP literal a covered name resolves to", []string{"allowed.test"}, connect("127.0.0.1:" + port), true, 403},
		{"plain HTTP to the IP literal a covered name resolves to", []string{"allowed.test"}, get("127.0.0.1:"+port, "allowed.test"), false, 403},
		{"origin-form request", []string{"allowed.test"}, "GET /p HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n", false, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := proxy(t, egress.NewForTest(c.allow, hosts))
			code, body := ask(t, addr, c.raw, c.connect)
			if code != c.want {
				t.Fatalf("status %d, want %d: %s", code, c.want, body)
			}
			if code == 403 && !strings.Contains(body, "capabilities.network.allow") {
				t.Errorf("the 403 does not name the manifest key: %q", body)
			}
			if code == 200 && !strings.HasPrefix(body, "upstream ") {
				t.Errorf("not the upstream's answer: %q", body)
			}
		})
	}
}

func TestRefusalNamesHostPort(t *testing.T) {
	addr := proxy(t, egress.NewForTest([]string{"allowed.test"}, nil))
	for _, c := range []struct {
		raw     string
		connect bool
		want    string
	}{
		{get("denied.test:8080", "denied.test"), false, "denied.test:8080"},
		{get("denied.test", "denied.test"), false, "denied.test:80"},
		{connect("denied.test:443"), true, "denied.test:443"},
		{connect("[::1]:22"), true, "[::1]:22"},
	} {
		code, body := ask(t, addr, c.raw, c.connect)
		if code != 403 || !strings.Contains(body, c.want) || !strings.Contains(body, "capabilities.network.allow") {
			t.Errorf("%q: %d %q, want 403 naming %s and capabilities.network.allow", strings.SplitN(c.raw, "\r\n", 2)[0], code, body, c.want)
		}
	}
}

// TestForgedHost: the request-target decides, never the Host header.
func TestForgedHost(t *testing.T) {
	_, port := upstream(t)
	addr := proxy(t, egress.NewForTest([]string{"allowed.test"}, map[string]string{"allowed.test": "127.0.0.1", "denied.test": "127.0.0.1"}))
	// A covered target with a forged Host: the upstream is sent the
	// target's name, not the forged one.
	code, body := ask(t, addr, get("allowed.test:"+port, "denied.test"), false)
	if code != 200 || !strings.Contains(body, "host=allowed.test:"+port) {
		t.Errorf("covered target, forged Host: %d %q, want 200 with host=allowed.test:%s", code, body, port)
	}
	// An uncovered target dressed up with a covered Host.
	code, body = ask(t, addr, get("denied.test:"+port, "allowed.test"), false)
	if code != 403 || !strings.Contains(body, "denied.test:"+port) {
		t.Errorf("uncovered target, covered Host: %d %q, want 403 naming denied.test:%s", code, body, port)
	}
	// A CONNECT whose Host header names a covered host.
	code, body = ask(t, addr, fmt.Sprintf("CONNECT denied.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n", port, port), true)
	if code != 403 {
		t.Errorf("CONNECT to an uncovered host with a covered Host header: %d %q", code, body)
	}
}

func TestEnv(t *testing.T) {
	got := map[string]string{}
	for _, kv := range egress.Env() {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		if got[k] != "http://127.0.0.1:3128" {
			t.Errorf("%s=%q", k, got[k])
		}
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		if !strings.Contains(got[k], "127.0.0.1") {
			t.Errorf("%s=%q", k, got[k])
		}
	}
	if len(got) != 6 {
		t.Errorf("Env sets %d names, want the six proxy variables: %v", len(got), got)
	}
}

// TestConnectPipelined: bytes a client sends right behind its CONNECT,
// before the 200, reach the upstream first.
func TestConnectPipelined(t *testing.T) {
	_, port := upstream(t)
	addr := proxy(t, egress.NewForTest([]string{"allowed.test"}, map[string]string{"allowed.test": "127.0.0.1"}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\nGET /early HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", err, resp)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "path=/early") {
		t.Errorf("the pipelined request got %q", b)
	}
}
