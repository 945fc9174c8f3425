package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/store"
)

func init() { register(newListCmd) }

func newListCmd(stdout, stderr io.Writer) *cobra.Command {
	var global, all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the artifacts in the project store (-g: global, --all: both)",
		Long: `List the artifacts in the project store (<project>/.murmur/artifacts, the
project being the nearest directory at or above this one holding a
murmur.yaml), or with -g the global store (~/.murmur/artifacts), or with --all
both, as a table: NAME VERSION RUNTIME SHA256 (its first 12 hex digits) SCOPE.

With --json, prints one JSON array, an object per artifact:
{"name", "version", "runtime", "sha256" (all 64 hex digits), "scope"
(project|global), "problem" (only for an entry that cannot be read; runtime
and sha256 are then "")}; an empty store is [].`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runList(global, all, asJSON, stdout, stderr)
		},
	}
	cmd.Flags().BoolVarP(&global, "global", "g", false, "list the global store")
	cmd.Flags().BoolVar(&all, "all", false, "list the project store and the global store")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the artifacts as one JSON array")
	return cmd
}

// listRow is one element of mur list --json.
type listRow struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Runtime string `json:"runtime"`
	SHA256  string `json:"sha256"`
	Scope   string `json:"scope"`
	Problem string `json:"problem,omitempty"`
}

func runList(global, all, asJSON bool, stdout, stderr io.Writer) error {
	if global && all {
		return usageError{fmt.Errorf("give -g or --all, not both")}
	}
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	var stores []*store.Store
	if !global {
		proj, err := storeProjectDirG()
		switch {
		case err == nil:
			stores = append(stores, store.Project(proj))
		case !all:
			return err
		}
	}
	if global || all {
		stores = append(stores, store.Global(homeDir))
	}
	var entries []store.Entry
	for _, s := range stores {
		l, err := s.List()
		if err != nil {
			return err
		}
		entries = append(entries, l...)
	}
	if asJSON {
		rows := make([]listRow, 0, len(entries))
		for _, e := range entries {
			r := listRow{Name: e.Name, Version: e.Version, Runtime: e.Runtime, SHA256: e.SHA256, Scope: e.Store.Kind, Problem: e.Problem}
			if e.Problem != "" {
				r.Runtime, r.SHA256 = "", ""
			}
			rows = append(rows, r)
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	if len(entries) == 0 {
		for _, s := range stores {
			fmt.Fprintf(stdout, "no artifacts in the %s store (%s)\n", s.Kind, s.Root)
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tRUNTIME\tSHA256\tSCOPE")
	for _, e := range entries {
		rt, sum := e.Runtime, e.SHA256
		if e.Problem != "" {
			rt, sum = "?", "?"
			fmt.Fprintln(stderr, diag.Warn("W-REG-001", "%s@%s in the %s store: %s", e.Name, e.Version, e.Store.Kind, e.Problem).String())
		}
		if len(sum) > 12 {
			sum = sum[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, e.Version, rt, sum, e.Store.Kind)
	}
	return tw.Flush()
}
