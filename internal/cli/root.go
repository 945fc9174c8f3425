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

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/version"
)

// Main runs mur with args and returns the process exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
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
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra reports an unknown subcommand with a plain error of its own.
		path := "mur"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		return diag.Print(stderr, diag.New("E-CFG-001", "%s", err.Error()).
			WithHint("run '%s --help' for usage", path).WithExit(diag.ExitUsage), "E-CFG-001")
	}
	return diag.Print(stderr, err, "E-RUN-001")
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
