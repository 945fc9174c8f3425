//go:build wasip1

// Command capsule-probe is a Go-kit test fixture for the murmur capsule world. What it
// does is chosen by the first line of its task (murmur-runtime/task.md), one command
// and its arguments separated by spaces; it reports in out/result.txt, one
// "key: value" line per observation:
//
//	invoke TOOL [DATA...]   murmur:tool-registry/invoke(TOOL, data = DATA joined by spaces)
//	escape                  tries to write and read outside its work folder (../, absolute
//	                        paths, symlinks out, the read-only runtime dir) and reports
//	                        each attempt as "blocked (error)" or "allowed" (with what a
//	                        read saw); the host checks where anything allowed landed
//	env                     writes the environment it sees, sorted
//	sleep DURATION          sleeps (Go duration), then writes "slept: DURATION"
//	trap                    panics: the host sees a trap
//	fail                    returns an error: the host sees WASI exit status 1
//	artifacts NAME VERSION  murmur:artifact-manager/manage list, search, describe, pull,
//	                        diagnostics and remove
//	send PEER TEXT...       murmur:message/send to PEER
//	task                    writes its task back
//	balloon                 allocates 1 MiB blocks and keeps them until the Go
//	                        runtime runs out of memory (the host sees resource_limit)
//	spin                    loops forever in its own code (the host's deadline stops it)
//
// With PROBE_INIT_READ=FILE in its environment, its package init (run while the host
// instantiates it) first reads FILE from its work folder: a FIFO there blocks it.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/murmur-go/murmur/guest"
)

func init() {
	if f := os.Getenv("PROBE_INIT_READ"); f != "" {
		os.ReadFile(f)
	}
	guest.Capsule(run)
}

func main() {}

// ballast and spins are globals so the compiler cannot drop the work.
var (
	ballast [][]byte
	spins   uint64
)

// report collects the lines of out/result.txt.
type report struct{ lines []string }

func (r *report) add(key, format string, args ...any) {
	r.lines = append(r.lines, key+": "+fmt.Sprintf(format, args...))
}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return fmt.Errorf("read task: %w", err)
	}
	line, _, _ := strings.Cut(task, "\n")
	words := strings.Fields(line)
	if len(words) == 0 {
		return errors.New("empty task: want a command on its first line")
	}
	var r report
	switch cmd, args := words[0], words[1:]; cmd {
	case "invoke":
		if len(args) == 0 {
			return errors.New("invoke: want a tool name")
		}
		invoke(&r, args[0], args[1:])
	case "escape":
		escape(&r)
	case "env":
		env := os.Environ()
		slices.Sort(env)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			r.add("env "+k, "%s", v)
		}
	case "sleep":
		if len(args) != 1 {
			return errors.New("sleep: want one duration")
		}
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return fmt.Errorf("sleep: %w", err)
		}
		time.Sleep(d)
		r.add("slept", "%s", d)
	case "trap":
		panic("capsule-probe: trap requested")
	case "fail":
		return errors.New("failure requested")
	case "artifacts":
		if len(args) != 2 {
			return errors.New("artifacts: want NAME VERSION")
		}
		artifacts(&r, args[0], args[1])
	case "send":
		if len(args) < 2 {
			return errors.New("send: want PEER TEXT")
		}
		send(&r, args[0], strings.Join(args[1:], " "))
	case "task":
		r.add("task", "%q", task)
	case "balloon":
		for {
			ballast = append(ballast, make([]byte, 1<<20))
			ballast[len(ballast)-1][0] = 1
		}
	case "spin":
		for spins = 0; ; spins++ {
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return write(r)
}

func write(r report) error {
	if err := os.MkdirAll("out", 0o755); err != nil {
		return err
	}
	return os.WriteFile("out/result.txt", []byte(strings.Join(r.lines, "\n")+"\n"), 0o644)
}

func opt(s *string) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%q", *s)
}

func invoke(r *report, tool string, data []string) {
	in := guest.ToolInput{LogPath: guest.Some("logs/" + tool + ".log")}
	if len(data) > 0 {
		in.Data = guest.Some(strings.Join(data, " "))
	}
	res, err := guest.Invoke(tool, in)
	if err != nil {
		r.add("invoke error", "%s", err)
		return
	}
	r.add("status", "%s", res.Status)
	r.add("summary", "%s", opt(res.Summary))
	r.add("data", "%s", opt(res.Data))
	r.add("data-path", "%s", opt(res.DataPath))
	r.add("truncated", "%t", res.Truncated)
	for _, kv := range res.Metadata {
		r.add("metadata "+kv.Key, "%s", kv.Value)
	}
}

// escape tries each way out of the work folder it knows of. The guest cannot tell
// an escape from a write that the runtime mapped into the work folder (an absolute
// path under a "/" preopen of it), so it only reports; the host test looks at disk.
func escape(r *report) {
	var saw string
	try := func(name string, fn func() error) {
		saw = ""
		if err := fn(); err != nil {
			r.add("escape "+name, "blocked (%v)", err)
			return
		}
		r.add("escape "+name, "allowed%s", saw)
	}
	writeFile := func(p string) func() error {
		return func() error { return os.WriteFile(p, []byte("capsule-probe escaped\n"), 0o644) }
	}
	try("dotdot-write", writeFile("../escape-dotdot.txt"))
	try("deep-dotdot-write", writeFile("out/../../escape-deep.txt"))
	try("absolute-write", writeFile("/escape-absolute.txt"))
	try("tmp-write", writeFile("/tmp/capsule-probe-escape.txt"))
	try("runtime-dir-write", writeFile(filepath.Join("murmur-runtime", "injected.txt")))
	try("absolute-read", func() error {
		b, err := os.ReadFile("/etc/passwd")
		saw = fmt.Sprintf(" (%d bytes)", len(b))
		return err
	})
	try("dotdot-read", func() error {
		entries, err := os.ReadDir("..")
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		saw = " (" + strings.Join(names, ",") + ")"
		return err
	})
	_ = os.MkdirAll("out", 0o755)
	try("symlink-absolute", func() error {
		if err := os.Symlink("/tmp", "out/link-absolute"); err != nil {
			return err
		}
		return writeFile("out/link-absolute/capsule-probe-symlink.txt")()
	})
	try("symlink-dotdot", func() error {
		if err := os.Symlink("../..", "out/link-dotdot"); err != nil {
			return err
		}
		return writeFile("out/link-dotdot/escape-symlink.txt")()
	})
}

func artifacts(r *report, name, version string) {
	for _, a := range guest.ListArtifacts() {
		r.add("list", "%s %s %s", a.Name, a.Version, a.Runtime)
	}
	if found, err := guest.SearchArtifacts(name); err != nil {
		r.add("search error", "%s", err)
	} else {
		for _, a := range found {
			r.add("search", "%s %s %s", a.Name, a.Version, a.Runtime)
		}
	}
	if info, err := guest.DescribeArtifact(name); err != nil {
		r.add("describe error", "%s", err)
	} else {
		r.add("describe", "%s %s %s %q tags=%s in=%s out=%s", info.Name, info.Version, info.Runtime,
			info.Description, strings.Join(info.Tags, ","), opt(info.InputSchema), opt(info.OutputSchema))
	}
	if a, err := guest.PullArtifact(name, version); err != nil {
		r.add("pull error", "%s", err)
	} else {
		r.add("pull", "%s %s %s", a.Name, a.Version, a.Runtime)
	}
	if st, err := guest.Diagnostics(); err != nil {
		r.add("diagnostics error", "%s", err)
	} else {
		r.add("diagnostics", "%s installed=%d capabilities=%q", st.CapsuleID, len(st.Installed), st.Capabilities)
	}
	if ok, err := guest.RemoveArtifact(name); err != nil {
		r.add("remove error", "%s", err)
	} else {
		r.add("remove", "%t", ok)
	}
}

func send(r *report, peer, text string) {
	res, err := guest.Send(peer, guest.Message{MessageID: "msg-capsule-probe-1", ContextID: guest.Some("ctx-probe"), Text: text})
	if err != nil {
		r.add("send error", "%s", err)
		return
	}
	r.add("send", "task=%s context=%s state=%s", res.TaskID, res.ContextID, res.State)
}
