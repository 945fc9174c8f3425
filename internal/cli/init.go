package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

func init() { register(newInitCmd) }

// guestKitModule is the guest kit's module path: a Go component imports
// <module>/guest.
const guestKitModule = "github.com/murmur-go/murmur"

// kitPlaceholder stands for a checkout of the module in what mur init writes
// when --kit is not given.
const kitPlaceholder = "/path/to/murmur"

func newInitCmd(stdout, _ io.Writer) *cobra.Command {
	var agent, script, tool bool
	var kit string
	cmd := &cobra.Command{
		Use:   "init [--agent | --script | --tool] [DIR]",
		Short: "Write a new, runnable capsule or tool project into DIR",
		Long: `Write a new project into DIR (default: the current directory, created when
missing). It refuses to overwrite: when any file it would write is already
there, it writes nothing.

  --agent   (the default) an agent capsule driven by murmur/driver-replay, which
            answers from transcript.yaml: no key, no network, so
            'mur run --task hi' answers at once. Swap the driver for a real
            model when ready (docs/agent-capsules.md).
  --script  a script capsule written in Go with the guest kit: go.mod, main.go
            (it reads the task and writes out/result.txt) and murmur.yaml.
  --tool    a WASM tool written in Go with the guest kit: go.mod, main.go
            (it echoes its input) and murmur.yaml; publish it for capsules to use.

A Go project's go.mod points at a checkout of ` + guestKitModule + ` with a
replace directive (--kit DIR; without it, ` + kitPlaceholder + ` to edit), and
its component is built with that checkout's scripts/build-component.sh, the
line mur init prints. The project's name is DIR's base name.`,
		Example: `  mur init hello && cd hello && mur run --task hi    # an offline agent that answers
  mur init --script --kit ~/src/murmur mycap
  mur init --tool --kit ~/src/murmur mytool`,
		Args: maxArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{agent, script, tool} {
				if b {
					n++
				}
			}
			if n > 1 {
				return usageError{fmt.Errorf("--agent, --script and --tool exclude each other: give one")}
			}
			kind := "agent"
			switch {
			case script:
				kind = "script"
			case tool:
				kind = "tool"
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runInit(kind, dir, kit, stdout)
		},
	}
	cmd.Flags().BoolVar(&agent, "agent", false, "an agent capsule with the offline replay driver and a transcript (the default)")
	cmd.Flags().BoolVar(&script, "script", false, "a Go script capsule: go.mod, main.go, murmur.yaml")
	cmd.Flags().BoolVar(&tool, "tool", false, "a Go WASM tool: go.mod, main.go, murmur.yaml")
	cmd.Flags().StringVar(&kit, "kit", "", "a checkout of "+guestKitModule+" `DIR`, for go.mod's replace and the build line (--script, --tool)")
	return cmd
}

// runInit writes the project of kind into dir.
func runInit(kind, dir, kit string, stdout io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return diag.Wrap(err, "E-RUN-206", "cannot resolve %s", dir)
	}
	name := projectName(filepath.Base(abs))
	if kit == "" {
		kit = kitPlaceholder
	} else if kit, err = filepath.Abs(kit); err != nil {
		return diag.Wrap(err, "E-RUN-206", "cannot resolve --kit")
	}
	files := initFiles(kind, name, kit)
	var there []string
	for f := range files {
		if _, err := os.Lstat(filepath.Join(abs, f)); err == nil {
			there = append(there, f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return diag.Wrap(err, "E-RUN-206", "cannot check %s", filepath.Join(abs, f))
		}
	}
	if len(there) > 0 {
		sort.Strings(there)
		return diag.New("E-RUN-205", "%s already holds %s: mur init does not overwrite", abs, strings.Join(there, ", ")).
			WithHint("give an empty or new directory: mur init --%s DIR", kind)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return diag.Wrap(err, "E-RUN-206", "cannot create %s", abs).WithHint("choose a directory you can write")
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		// O_EXCL: a file that appeared since the check is not overwritten either.
		fh, err := os.OpenFile(filepath.Join(abs, f), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, err = io.WriteString(fh, files[f])
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return diag.Wrap(err, "E-RUN-206", "cannot write %s", filepath.Join(abs, f)).WithHint("choose a directory you can write")
		}
	}
	article := map[string]string{"agent": "an agent", "script": "a script", "tool": "a tool"}[kind]
	fmt.Fprintf(stdout, "wrote %s project %s in %s: %s\n", article, name, abs, strings.Join(names, ", "))
	cd := ""
	if dir != "." {
		cd = "cd " + shellQuote(dir) + " && "
	}
	switch kind {
	case "agent":
		fmt.Fprintf(stdout, "next: %smur run --task hi\n", cd)
	case "script":
		fmt.Fprintf(stdout, "next: %s%s && mur run --task hi\n", cd, buildLine(kit, "capsule", name))
	case "tool":
		fmt.Fprintf(stdout, "next: %s%s && mur build && mur publish\n", cd, buildLine(kit, "tool", name))
	}
	if kind != "agent" && kit == kitPlaceholder {
		fmt.Fprintf(stdout, "(first replace %s in go.mod with a checkout of %s, or run mur init again with --kit)\n", kitPlaceholder, guestKitModule)
	}
	return nil
}

// projectName turns a directory's name into a bare capsule name
// ([a-z0-9][a-z0-9-]{0,62}).
func projectName(base string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	if !manifest.ValidSegment(s) {
		return "my-capsule"
	}
	return s
}

func buildLine(kit, world, name string) string {
	return shellQuote(filepath.Join(kit, "scripts", "build-component.sh")) + " . " + world + " " + name + ".wasm"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./~") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// initFiles is what mur init writes for kind, by file name.
func initFiles(kind, name, kit string) map[string]string {
	switch kind {
	case "script":
		return map[string]string{
			"murmur.yaml": fmt.Sprintf(scriptManifest, name, buildLine(kit, "capsule", name)),
			"go.mod":      goMod(name, kit),
			"main.go":     fmt.Sprintf(scriptMain, name),
		}
	case "tool":
		return map[string]string{
			"murmur.yaml": fmt.Sprintf(toolManifest, name, buildLine(kit, "tool", name)),
			"go.mod":      goMod(name, kit),
			"main.go":     fmt.Sprintf(toolMain, name),
		}
	}
	return map[string]string{
		"murmur.yaml":     fmt.Sprintf(agentManifest, name),
		"transcript.yaml": fmt.Sprintf(agentTranscript, name),
	}
}

// goMod is a component module's go.mod: the kit from a checkout, by a
// replace directive, until the module is published at a version. The go
// line is the kit's own minimum (go.mod's), which a component build needs.
func goMod(name, kit string) string {
	return fmt.Sprintf(`module example.com/%s

go %s

require %s v0.0.0

// The guest kit, from a checkout of %s (docs/guest-kit.md).
replace %s => %s
`, name, guestKitGoVersion, guestKitModule, guestKitModule, guestKitModule, kit)
}

// guestKitGoVersion is the go line of the kit's go.mod; TestInitGoLine
// keeps the two equal.
const guestKitGoVersion = "1.26.8"

const agentManifest = `# %[1]s: an agent capsule (mur init --agent).
#
# The inference: block makes it an agent: the runtime's own loop does the work.
# Its driver, the built-in murmur/driver-replay, answers each turn from
# transcript.yaml instead of asking a model: no key, no network. Run it with
#
#   mur run --task hi
#
# For a real model, swap the driver (docs/agent-capsules.md, docs/drivers.md);
# every key is in docs/manifest.md.
name: %[1]s
version: "0.1.0"
description: A new agent capsule.

requires_files:
  - transcript.yaml

artifacts:
  - name: murmur/driver-replay
    version: "1.0.0"
    runtime: driver
    config:
      transcript: transcript.yaml

inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  max_turns: 3
  system_prompt: You are %[1]s. Answer the task in one short paragraph.

lifecycle:
  task_acceptance: single
  after_task: exit
`

const agentTranscript = `# The answers murmur/driver-replay gives, one per turn, in order (docs/drivers.md).
version: 1
responses:
  - content:
      - {type: text, text: "Hello from %s! I answer from transcript.yaml; give me a real model's driver to think for myself."}
`

const scriptManifest = `# %[1]s: a script capsule written in Go (mur init --script).
#
# No inference: block, one root component (%[1]s.wasm) that exports
# murmur:capsule/run. Build it, then run it:
#
#   %[2]s
#   mur run --task hi
#
# Every key is in docs/manifest.md.
name: %[1]s
version: "0.1.0"
description: A new script capsule.

capabilities:
  limits:
    deadline_seconds: 30
`

const scriptMain = `//go:build wasip1

// Command %[1]s is a script capsule: it reads its task and writes its
// answer to out/result.txt in its work folder.
package main

import (
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

// A reactor component never runs main: register the capsule from init.
func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return fmt.Errorf("read the task: %%w", err)
	}
	answer := fmt.Sprintf("%[1]s read the task %%q\n", strings.TrimSpace(task))
	return guest.WriteResult(answer)
}
`

const toolManifest = `# %[1]s: a WASM tool written in Go (mur init --tool).
#
# It answers murmur:tool/run. Build the component, then publish the tool so a
# capsule can declare it under artifacts: (name: local/%[1]s, version: "0.1.0"):
#
#   %[2]s
#   mur build && mur publish
#
# Every key is in docs/manifest.md.
name: %[1]s
version: "0.1.0"
runtime: tool
description: A new tool.
`

const toolMain = `//go:build wasip1

// Command %[1]s is a tool: its result's data is its input's data.
package main

import (
	"fmt"

	"github.com/murmur-go/murmur/guest"
)

// A reactor component never runs main: register the tool from init.
func init() { guest.Tool(run) }

func main() {}

func run(in guest.ToolInput) guest.ToolResult {
	if in.Data == nil {
		return guest.ToolResult{Status: guest.StatusFailed, Summary: guest.Some("%[1]s: no input data")}
	}
	return guest.ToolResult{
		Status:  guest.StatusPassed,
		Summary: guest.Some(fmt.Sprintf("%[1]s read %%d bytes", len(*in.Data))),
		Data:    guest.Some(*in.Data),
	}
}
`
