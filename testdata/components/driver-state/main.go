//go:build wasip1

// Command driver-state is a Go-kit test fixture of the driver world that keeps state:
// each turn adds one to the count in /state/turns, its artifact's state store (written
// to a temporary file and renamed, so a reader never sees half a count), and answers
// end_turn with the text "turn N". When the request's last message says "hold MS",
// it sleeps MS milliseconds after writing (a call that keeps its store's lock), and
// "pad N" writes N more bytes to /state/pad (a store past state_max_bytes).
package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Tool(turn) }

func turn(in guest.ToolInput) guest.ToolResult {
	req := ""
	if in.Data != nil {
		req = *in.Data
	}
	n := 0
	if b, err := os.ReadFile("/state/turns"); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	n++
	if err := os.WriteFile("/state/turns.tmp", []byte(strconv.Itoa(n)+"\n"), 0o600); err != nil {
		return failed("writing the count: " + err.Error())
	}
	if err := os.Rename("/state/turns.tmp", "/state/turns"); err != nil {
		return failed("renaming the count: " + err.Error())
	}
	if v, ok := verb(req, "pad "); ok {
		if err := os.WriteFile("/state/pad", make([]byte, v), 0o600); err != nil {
			return failed("padding: " + err.Error())
		}
	}
	if v, ok := verb(req, "hold "); ok {
		time.Sleep(time.Duration(v) * time.Millisecond)
	}
	out := `{"stop_reason":"end_turn","content":[{"type":"text","text":"turn ` + strconv.Itoa(n) + `"}]}`
	return guest.ToolResult{Status: guest.StatusPassed, Data: guest.Some(out)}
}

// verb finds "<prefix><digits>" anywhere in the request's JSON text.
func verb(req, prefix string) (int, bool) {
	i := strings.LastIndex(req, prefix)
	if i < 0 {
		return 0, false
	}
	s := req[i+len(prefix):]
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	v, err := strconv.Atoi(s[:j])
	return v, err == nil
}

func failed(msg string) guest.ToolResult {
	return guest.ToolResult{Status: guest.StatusFailed, Summary: guest.Some(msg)}
}

func main() {}
