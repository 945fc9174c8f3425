//go:build wasip1

// Command state-counter is the example of a tool that keeps state across sessions:
// a murmur:tool/run component written in Go with the guest kit whose artifact declares
// capabilities.state, so the runtime hands it its store as the folder state/
// (docs/running-capsules.md, "State stores"). Each call adds one to the number in state/count and answers the
// new number: a fresh session goes on from where the last one stopped, and the
// runtime's lock on the store keeps concurrent sessions from losing a count.
//
// Its input's data may ask for more than a count (what the runtime's tests use):
//
//	pad N     also writes N bytes to state/pad (a store that grows)
//	hold MS   writes the new count to a temporary file, waits MS milliseconds, then
//	          renames it over state/count (a call killed mid-write)
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/murmur-go/murmur/guest"
)

// stateDir is where the runtime preopens the tool's store, read-write.
const stateDir = "state"

// A reactor component never runs main: register the tool from init.
func init() { guest.Tool(run) }

func main() {}

func run(in guest.ToolInput) guest.ToolResult {
	n, err := count(in)
	if err != nil {
		return guest.ToolResult{Status: guest.StatusFailed, Summary: guest.Some("state-counter: " + err.Error())}
	}
	return guest.ToolResult{
		Status:  guest.StatusPassed,
		Summary: guest.Some(fmt.Sprintf("state-counter has been called %d times", n)),
		Data:    guest.Some(strconv.FormatInt(n, 10)),
	}
}

func count(in guest.ToolInput) (int64, error) {
	var verb string
	var arg int64
	if in.Data != nil {
		f := strings.Fields(*in.Data)
		if len(f) == 2 {
			verb = f[0]
			arg, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	file := filepath.Join(stateDir, "count")
	var n int64
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		if n, err = strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err != nil {
			return 0, fmt.Errorf("state/count holds %q, not a number", b)
		}
	case !os.IsNotExist(err):
		return 0, err
	}
	n++
	if verb == "pad" {
		if err := os.WriteFile(filepath.Join(stateDir, "pad"), make([]byte, arg), 0o600); err != nil {
			return 0, err
		}
	}
	// Written whole to a temporary file and renamed over the count: a call
	// stopped at any point leaves the old count or the new one.
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	if _, err := f.WriteString(strconv.FormatInt(n, 10) + "\n"); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if verb == "hold" {
		time.Sleep(time.Duration(arg) * time.Millisecond)
	}
	return n, os.Rename(tmp, file)
}
