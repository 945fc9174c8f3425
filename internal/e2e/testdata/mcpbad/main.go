// Command mcpbad is an MCP stdio server for the tests, good or bad by its
// first argument: it speaks newline-delimited JSON-RPC by hand, so it can
// break the protocol in exactly one way at a time.
//
//	ok        a well-behaved legacy server: tools noop, fail, probe
//	garbage   prints a banner on stdout before anything
//	silent    never answers initialize
//	exit3     writes to stderr and exits 3 at once
//	many      lists 10,000 tools over pages of 1,000 (the allow-listed one last)
//	big       answers tools/call with a 100 MB text
//	sampling  asks sampling/createMessage and roots/list during a call
//	crash     exits when a tool is called
//	slow      takes 30 s to answer a call
//	meta      answers a call with the request's params._meta as its text (and
//	          writes it to stderr)
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

var out = bufio.NewWriterSize(os.Stdout, 1<<20)

func send(v any) {
	b, _ := json.Marshal(v)
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}

func reply(id json.RawMessage, result any) {
	send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func text(s string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
}

var schema = map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}

func main() {
	mode := "ok"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	fmt.Fprintf(os.Stderr, "mcpbad %s starting\n", mode)
	switch mode {
	case "garbage":
		fmt.Println("Welcome to the server! (this banner breaks the protocol)")
	case "exit3":
		fmt.Fprintln(os.Stderr, "fatal: no configuration found")
		os.Exit(3)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	var asked int
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m msg
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Method == "" { // an answer to our own request
			continue
		}
		switch m.Method {
		case "server/discover":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		case "initialize":
			if mode == "silent" {
				continue
			}
			reply(m.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "mcpbad", "version": "1.0.0"}})
		case "tools/list":
			var p struct {
				Cursor string `json:"cursor"`
			}
			json.Unmarshal(m.Params, &p)
			if mode == "many" {
				page := 0
				fmt.Sscanf(p.Cursor, "%d", &page)
				var tools []any
				for i := page * 1000; i < (page+1)*1000; i++ {
					name := fmt.Sprintf("t%05d", i)
					if i == 9999 {
						name = "noop"
					}
					tools = append(tools, map[string]any{"name": name, "inputSchema": schema})
				}
				res := map[string]any{"tools": tools}
				if page < 9 {
					res["nextCursor"] = fmt.Sprint(page + 1)
				}
				reply(m.ID, res)
				continue
			}
			reply(m.ID, map[string]any{"tools": []any{
				map[string]any{"name": "noop", "description": "does nothing", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "fail", "description": "always fails", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "probe", "description": "tries to reach what it should not", "inputSchema": schema},
				map[string]any{"name": "secret", "description": "not allow-listed", "inputSchema": map[string]any{"type": "object"}},
			}})
		case "tools/call":
			var p struct {
				Name      string          `json:"name"`
				Arguments map[string]any  `json:"arguments"`
				Meta      json.RawMessage `json:"_meta"`
			}
			json.Unmarshal(m.Params, &p)
			switch {
			case mode == "crash":
				os.Exit(7)
			case mode == "big":
				out.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"`)
				chunk := strings.Repeat("x", 1<<20)
				for i := 0; i < 100; i++ {
					if _, err := out.WriteString(chunk); err != nil {
						return
					}
				}
				out.WriteString("\"}]}}\n")
				out.Flush()
			case mode == "meta":
				fmt.Fprintf(os.Stderr, "_meta: %s\n", p.Meta)
				reply(m.ID, text(string(p.Meta)))
			case mode == "slow":
				time.Sleep(30 * time.Second)
				reply(m.ID, text("late"))
			case mode == "sampling" && asked == 0:
				asked++
				send(map[string]any{"jsonrpc": "2.0", "id": 900, "method": "sampling/createMessage", "params": map[string]any{"messages": []any{}, "maxTokens": 10}})
				send(map[string]any{"jsonrpc": "2.0", "id": 901, "method": "roots/list"})
				time.Sleep(200 * time.Millisecond)
				reply(m.ID, text("asked twice"))
			case p.Name == "fail":
				reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "it failed on purpose"}}, "isError": true})
			case p.Name == "probe":
				r := probe(p.Arguments)
				fmt.Fprint(os.Stderr, r)
				reply(m.ID, text(r))
			default:
				reply(m.ID, text("noop done"))
			}
		case "ping":
			reply(m.ID, map[string]any{})
		default:
			if len(m.ID) > 0 {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
	}
}

// probe reports, one line each, what the server could reach: a file, a
// host through the proxy, a loopback port of the host, the environment.
func probe(args map[string]any) string {
	var b strings.Builder
	if p, _ := args["path"].(string); p != "" {
		if _, err := os.ReadFile(p); err != nil {
			fmt.Fprintf(&b, "read %s: refused: %v\n", p, err)
		} else {
			fmt.Fprintf(&b, "read %s: ok\n", p)
		}
	}
	if u, _ := args["url"].(string); u != "" {
		c := &http.Client{Timeout: 5 * time.Second}
		if resp, err := c.Get(u); err != nil {
			fmt.Fprintf(&b, "get %s: %v\n", u, err)
		} else {
			resp.Body.Close()
			fmt.Fprintf(&b, "get %s: status %d\n", u, resp.StatusCode)
		}
	}
	if a, _ := args["dial"].(string); a != "" {
		if c, err := net.DialTimeout("tcp", a, 2*time.Second); err != nil {
			fmt.Fprintf(&b, "dial %s: unreachable: %v\n", a, err)
		} else {
			c.Close()
			fmt.Fprintf(&b, "dial %s: connected\n", a)
		}
	}
	fmt.Fprintf(&b, "env: %s\n", strings.Join(os.Environ(), " "))
	return b.String()
}
