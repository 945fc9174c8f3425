//go:build wasip1

// Command capsule-delegator is a Go-kit test fixture: a script capsule that
// delegates. Each line of its task (murmur-runtime/task.md) is one
// delegate-task input, a JSON object; with "wait" as the task's first line
// it then waits for every outcome block the runtime writes to
// murmur-runtime/delegations/<delegation_id>.outcome.txt (up to 60 s).
// It reports in out/result.txt: per call "call: <status> <data>" or
// "call error: <err>", then per awaited delegation the outcome block.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return fmt.Errorf("read task: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(task), "\n")
	wait := len(lines) > 0 && strings.TrimSpace(lines[0]) == "wait"
	if wait {
		lines = lines[1:]
	}
	var out []string
	var started []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		res, err := guest.Invoke("delegate-task", guest.ToolInput{Data: guest.Some(l)})
		if err != nil {
			out = append(out, "call error: "+err.Error())
			continue
		}
		data := ""
		if res.Data != nil {
			data = *res.Data
		}
		out = append(out, fmt.Sprintf("call: %s %s", res.Status, data))
		var r struct {
			DelegationID string `json:"delegation_id"`
			Status       string `json:"status"`
		}
		if json.Unmarshal([]byte(data), &r) == nil && r.Status == "started" {
			started = append(started, r.DelegationID)
		}
	}
	if wait {
		for _, id := range started {
			p := filepath.Join(os.Getenv("MURMUR_RUNTIME_DIR"), "delegations", id+".outcome.txt")
			var b []byte
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if b, err = os.ReadFile(p); err == nil {
					break
				}
			}
			if err != nil {
				out = append(out, "outcome "+id+": none within 60s")
				continue
			}
			out = append(out, "outcome "+id+":\n"+string(b))
		}
	}
	if err := os.MkdirAll("out", 0o755); err != nil {
		return err
	}
	return os.WriteFile("out/result.txt", []byte(strings.Join(out, "\n")+"\n"), 0o644)
}
