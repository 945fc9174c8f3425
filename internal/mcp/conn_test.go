package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server that never answers server/discover is taken for a legacy one
// after ProbeTimeout and sent initialize on the same connection; its late
// answer to the probe is dropped. A request of the server's is answered
// -32601 and reported, never reaching the SDK.
func TestProbeTimeoutAndDenial(t *testing.T) {
	saved := ProbeTimeout
	ProbeTimeout = 200 * time.Millisecond
	defer func() { ProbeTimeout = saved }()

	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	var mu sync.Mutex
	var answers []string
	go func() {
		in := bufio.NewScanner(sr)
		in.Buffer(nil, 1<<20)
		var probeID json.RawMessage
		for in.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Error  json.RawMessage `json:"error"`
			}
			json.Unmarshal(in.Bytes(), &m)
			write := func(s string) { io.WriteString(sw, s+"\n") }
			switch m.Method {
			case "server/discover":
				probeID = m.ID // never answered in time
			case "initialize":
				write(`{"jsonrpc":"2.0","id":` + string(probeID) + `,"result":{"late":true}}`)
				write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"t","version":"1"}}}`)
			case "tools/list":
				write(`{"jsonrpc":"2.0","id":77,"method":"roots/list"}`)
				write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"tools":[]}}`)
			case "":
				mu.Lock()
				answers = append(answers, string(m.Error))
				mu.Unlock()
			}
		}
	}()
	var denied []string
	tr := &transport{inner: &sdk.IOTransport{Reader: cr, Writer: cw}, hooks: connHooks{denied: func(m string) {
		mu.Lock()
		denied = append(denied, m)
		mu.Unlock()
	}}}
	client := sdk.NewClient(&sdk.Implementation{Name: "mur", Version: "test"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if d := time.Since(start); d < ProbeTimeout || d > 3*time.Second {
		t.Errorf("connected after %v", d)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Errorf("protocol %s", v)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(answers) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(denied) != 1 || denied[0] != "roots/list" || !strings.Contains(answers[0], "-32601") || !strings.Contains(answers[0], "murmur does not provide roots/list") {
		t.Errorf("denied %v answers %v", denied, answers)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition never held")
}
