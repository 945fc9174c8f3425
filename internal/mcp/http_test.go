package mcp

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/murmur-go/murmur/internal/manifest"
)

// An HTTP server's host name is resolved once, at its first start, and
// that address is dialled for every connection after it, even when the
// name's answer changes; TLS still verifies and sends the host name
// (example.com, the name httptest's certificate carries, resolved here to
// the loopback server).
func TestHTTPResolvedOnceAndDialled(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "pinned", Version: "1.0.0"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest, map[string]any) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "noop done"}}}, nil, nil
		})
	hs := httptest.NewUnstartedServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		// The Host header is example.com while the server listens on
		// loopback: the SDK would take that for DNS rebinding.
		&sdk.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	var mu sync.Mutex
	var sni []string
	hs.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		sni = append(sni, h.ServerName)
		mu.Unlock()
		return nil, nil
	}}
	hs.StartTLS()
	defer hs.Close()
	port := hs.Listener.Addr().(*net.TCPAddr).Port

	savedLookup, savedRoots := lookupIP, tlsRoots
	defer func() { lookupIP, tlsRoots = savedLookup, savedRoots }()
	tlsRoots = hs.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	var lookups []string
	answer := net.IPv4(127, 0, 0, 1)
	lookupIP = func(_ context.Context, host string) ([]net.IPAddr, error) {
		mu.Lock()
		defer mu.Unlock()
		lookups = append(lookups, host)
		if answer == nil {
			return nil, errors.New("the name changed its answer")
		}
		return []net.IPAddr{{IP: answer}}, nil
	}

	u := (&url.URL{Scheme: "https", Host: net.JoinHostPort("example.com", strconv.Itoa(port)), Path: "/mcp"}).String()
	a := manifest.Artifact{Name: "local/pinned", Version: "1.0.0", Runtime: manifest.Some(manifest.RuntimeMCP),
		MCP: &manifest.MCP{URL: u, Tools: []string{"noop"}}}
	s := New(Config{Entry: a, ClientVersion: "test", RecordsDir: t.TempDir(), Workdir: t.TempDir()})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	mu.Lock()
	answer = nil // any later lookup fails
	mu.Unlock()
	for i := 0; i < 3; i++ {
		if r := s.Call(context.Background(), "noop", json.RawMessage(`{}`), "c", ""); r.Err != nil || r.Text != "noop done" {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	// A second start of the same server (as a restart makes) dials the
	// address found first.
	s.mu.Lock()
	s.kill(s.cur)
	err := s.startLocked(context.Background(), false)
	s.mu.Unlock()
	if err != nil {
		t.Fatalf("the second start: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lookups) != 1 || lookups[0] != "example.com" || s.addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) {
		t.Errorf("lookups %v, dialled %s", lookups, s.addr)
	}
	if len(sni) == 0 {
		t.Fatal("no TLS handshake")
	}
	for _, n := range sni {
		if n != "example.com" {
			t.Errorf("TLS server name %q, want example.com", n)
		}
	}
}

// A url whose host does not resolve fails the start with E-RUN-152.
func TestHTTPUnresolvable(t *testing.T) {
	saved := lookupIP
	defer func() { lookupIP = saved }()
	lookupIP = func(context.Context, string) ([]net.IPAddr, error) { return nil, errors.New("no such host") }
	a := manifest.Artifact{Name: "local/gone", Version: "1.0.0", Runtime: manifest.Some(manifest.RuntimeMCP),
		MCP: &manifest.MCP{URL: "https://gone.example:8443/mcp", Tools: []string{"noop"}}}
	s := New(Config{Entry: a, ClientVersion: "test", RecordsDir: t.TempDir(), Workdir: t.TempDir()})
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "E-RUN-152") || !strings.Contains(err.Error(), "does not resolve") {
		t.Fatalf("start: %v", err)
	}
}
