//go:build wasip1

// Command capsule-repeat is a Go-kit test fixture for the murmur capsule world: it
// invokes one tool many times. Its task's first line is "TOOL N [DATA...]": it calls
// murmur:tool-registry/invoke(TOOL, data = DATA joined by spaces) N times, one after
// another, and reports in out/result.txt:
//
//	calls: N
//	passed: how many answered passed
//	last: the last passed result's data
//	first-error: the first failure (an invoke error, or a status and summary)
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return fmt.Errorf("read task: %w", err)
	}
	line, _, _ := strings.Cut(task, "\n")
	words := strings.Fields(line)
	if len(words) < 2 {
		return errors.New("want TOOL N [DATA...] on the task's first line")
	}
	n, err := strconv.Atoi(words[1])
	if err != nil || n < 0 {
		return fmt.Errorf("N: %q is not a count", words[1])
	}
	in := guest.ToolInput{}
	if len(words) > 2 {
		in.Data = guest.Some(strings.Join(words[2:], " "))
	}
	passed, last, firstErr := 0, "none", "none"
	for i := 0; i < n; i++ {
		res, err := guest.Invoke(words[0], in)
		switch {
		case err != nil:
			if firstErr == "none" {
				firstErr = err.Error()
			}
		case res.Status != guest.StatusPassed:
			if firstErr == "none" {
				sum := ""
				if res.Summary != nil {
					sum = *res.Summary
				}
				firstErr = fmt.Sprintf("%s: %s", res.Status, sum)
			}
		default:
			passed++
			if res.Data != nil {
				last = *res.Data
			}
		}
	}
	if err := os.MkdirAll("out", 0o755); err != nil {
		return err
	}
	out := fmt.Sprintf("calls: %d\npassed: %d\nlast: %s\nfirst-error: %s\n", n, passed, last, firstErr)
	return os.WriteFile(guest.ResultPath, []byte(out), 0o644)
}
