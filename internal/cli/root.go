// Package cli holds the mur subcommands. It is the only package that knows about
// terminals: it parses flags (cobra), calls the domain packages and renders
// their results and diagnostics.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/version"
)

// Main runs mur with args and returns the process exit status.
//
// A command run with --json that fails before writing anything to stdout
// also prints the error there as one JSON object (jsonError), so a program
// reading stdout sees either the command's JSON or the error's, never
// nothing; the person-readable form still goes to stderr, and the exit
// status is the same either way. A command that already wrote its JSON
// (mur run's ready line, mur doctor's report) carries the failure there.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		// What cobra prints for it (newRoot's version template), without
		// building every command's flags first: --version is the start-up
		// floor scripts and the installer pay.
		fmt.Fprintf(stdout, "mur %s\n", version.Version)
		return 0
	}
	stderr = withColour(stderr) // error, warning and hint coloured on a terminal only
	out := &countingWriter{w: stdout}
	root := newRoot(out, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var es exitStatus
	if errors.As(err, &es) {
		return int(es) // the command has said what happened
	}
	var ue usageError
	usage := errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ")
	if usage {
		// cobra reports an unknown subcommand with a plain error of its own.
		path := "mur"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		msg, near := usageSuggestions(cmd, err.Error())
		hint := fmt.Sprintf("run '%s --help' for usage", path)
		if near != "" {
			hint = "did you mean " + near + "? " + hint
		}
		err = diag.New("E-CFG-001", "%s", msg).WithHint("%s", hint).WithExit(diag.ExitUsage)
	}
	// Flag parsing stops at the first bad flag, so a --json after it is
	// only in the arguments.
	if (wantsJSON(cmd) || usage && argsHaveJSON(args)) && out.n == 0 {
		writeJSONError(stdout, err, "E-RUN-001")
	}
	return diag.Print(stderr, err, "E-RUN-001")
}

// wantsJSON reports whether cmd was given --json.
func wantsJSON(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	return f != nil && f.Value.String() == "true"
}

func argsHaveJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// countingWriter counts what a command wrote to stdout.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ error }

// exitStatus ends mur with that status and prints nothing more: the command
// already said why (a run ended by a signal exits 128 + signo).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "mur",
		Short:         "Run agents and scripts as isolated capsules declared in murmur.yaml",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("mur {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, add := range subcommands {
		root.AddCommand(add(stdout, stderr))
	}
	return root
}

// subcommands is filled by each command's file through register, so commands
// added in parallel never edit the same lines.
var subcommands []func(stdout, stderr io.Writer) *cobra.Command

func register(f func(stdout, stderr io.Writer) *cobra.Command) { subcommands = append(subcommands, f) }

// exactArgs is cobra.ExactArgs reporting a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args))}
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs reporting a usage error.
func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usageError{fmt.Errorf("%s takes at most %d argument(s), got %d", cmd.CommandPath(), n, len(args))}
		}
		return nil
	}
}

// usageSuggestions splits cobra's "Did you mean this?" block (a
// newline-and-tab list) off an unknown command's message, and for an
// unknown flag finds the command's flags within two edits of it. near
// names them as a person would type them ("mur run or mur ps",
// "--manifest"); "" when there are none.
func usageSuggestions(cmd *cobra.Command, text string) (msg, near string) {
	msg, list, found := strings.Cut(text, "\n\nDid you mean this?\n")
	if found {
		parent := "mur"
		if cmd != nil {
			parent = cmd.CommandPath()
		}
		var names []string
		for _, l := range strings.Split(list, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				names = append(names, parent+" "+l)
			}
		}
		return strings.TrimSpace(msg), orList(names)
	}
	msg = strings.TrimSpace(text)
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok || cmd == nil {
		return msg, ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && diag.EditDistance(name, f.Name) <= 2 {
			names = append(names, "--"+f.Name)
		}
	})
	return msg, orList(names)
}

func orList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// AgentReady is called (when set) once an agent session of mur run is
// ready to serve tasks: cmd/mur resumes the Go collector's default pacing
// there rather than after a fixed pause, so the first tasks are not served
// with the collector held back.
var AgentReady func()
