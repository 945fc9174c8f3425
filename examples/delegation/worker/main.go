//go:build wasip1

// Command worker is examples/delegation's script-capsule worker: a Go-kit
// component an orchestrator delegates to. It reads its task
// (murmur-runtime/task.md, written from what its parent sent), counts the
// lines and words of every text file in its work folder — when its parent
// lists it under capabilities.spawn.workdir_snapshot, that folder starts as
// a copy of the parent's — and writes what it found to out/result.txt,
// which is the answer its parent reads.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return fmt.Errorf("read the task: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "task: %s\n", strings.TrimSpace(task))
	files, err := count(".")
	if err != nil {
		return err
	}
	if len(files) == 0 {
		b.WriteString("files: none (no copy of the parent's work folder)\n")
	}
	for _, f := range files {
		fmt.Fprintf(&b, "file: %s\n", f)
	}
	if err := guest.WriteResult(b.String()); err != nil {
		return err
	}
	fmt.Println("worker: wrote out/result.txt")
	return nil
}

// count lists "<path>: <lines> lines, <words> words" for each regular file
// below dir, skipping what the runtime and the capsule itself write.
func count(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an entry that cannot be read is left out
		}
		if d.IsDir() && (d.Name() == "out" || d.Name() == "murmur-runtime" || d.Name() == "logs") && p != dir {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		s := string(b)
		out = append(out, fmt.Sprintf("%s: %d lines, %d words", filepath.ToSlash(p), strings.Count(s, "\n"), len(strings.Fields(s))))
		return nil
	})
	sort.Strings(out)
	return out, err
}
