package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/snapshot"
)

func init() { register(newStateCmd) }

func newStateCmd(stdout, _ io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "See and clear the durable state stores tools keep (~/.murmur/state)",
		Long: `A state store is a folder that outlives sessions: an artifact that declares
capabilities.state has its store's folder handed to its component as state/.
Stores live in ~/.murmur/state/<store>/ and nothing removes them but
'mur state rm' (not trace.retain, not 'mur trace rm').`,
	}
	var lsJSON, rmJSON bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the state stores: NAME BYTES PATH",
		Long: `List the state stores in ~/.murmur/state as a table: NAME, BYTES (the size the
state_max_bytes limit counts: the apparent size of its regular files) and PATH.

With --json, prints one JSON array, an object per store: {"name", "bytes",
"path", "problem" (only for a store that cannot be measured or used; bytes is
then what was counted)}; no store is [].`,
		Args: exactArgs(0),
		RunE: func(*cobra.Command, []string) error { return stateLs(lsJSON, stdout) },
	}
	ls.Flags().BoolVar(&lsJSON, "json", false, "print the stores as one JSON array")
	rm := &cobra.Command{
		Use:   "rm STORE",
		Short: "Remove a state store and everything in it",
		Long: `Remove the state store STORE (~/.murmur/state/STORE and its lock file). Refused
while a component call holds the store; a session that opens it later starts
from an empty store.

With --json, prints {"removed": STORE, "path", "bytes"}.`,
		Example: `  mur state rm notes`,
		Args:    exactArgs(1),
		RunE:    func(_ *cobra.Command, args []string) error { return stateRm(args[0], rmJSON, stdout) },
	}
	rm.Flags().BoolVar(&rmJSON, "json", false, "print what was removed as one JSON object")
	cmd.AddCommand(ls, rm)
	return cmd
}

// stateRow is one element of mur state ls --json.
type stateRow struct {
	Name    string `json:"name"`
	Bytes   int64  `json:"bytes"`
	Path    string `json:"path"`
	Problem string `json:"problem,omitempty"`
}

func stateLs(asJSON bool, stdout io.Writer) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	root := home.State(homeDir)
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return diag.Wrap(err, "E-IO-001", "cannot list the state stores in %s", root)
	}
	rows := []stateRow{}
	for _, e := range entries {
		if !manifest.ValidSegment(e.Name()) || e.Type()&os.ModeSymlink == 0 && !e.IsDir() {
			continue // the lock files beside the stores, and anything not a store
		}
		r := stateRow{Name: e.Name(), Path: home.StateStore(homeDir, e.Name())}
		if e.Type()&os.ModeSymlink != 0 {
			r.Problem = r.Path + " is a symbolic link"
		} else if r.Bytes, err = grant.WorkdirBytes(r.Path); err != nil {
			r.Problem = err.Error()
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	if asJSON {
		b, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBYTES\tPATH")
	for _, r := range rows {
		path := r.Path
		if r.Problem != "" {
			path += " (" + r.Problem + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Name, r.Bytes, path)
	}
	return tw.Flush()
}

func stateRm(name string, asJSON bool, stdout io.Writer) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	if !manifest.ValidSegment(name) {
		return usageError{fmt.Errorf("%q is not a state store name ([a-z0-9][a-z0-9-]{0,62})", name)}
	}
	dir := home.StateStore(homeDir, name)
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return diag.New("E-CFG-010", "there is no state store %s in %s", name, home.State(homeDir)).
			WithHint("'mur state ls' lists the stores")
	case err != nil:
		return diag.New("E-CAP-009", "the state store %s at %s cannot be used: %v", name, dir, err)
	case !st.IsDir():
		return diag.New("E-CAP-009", "the state store %s at %s cannot be used: %s is not a directory", name, dir, dir).
			WithHint("remove %s by hand: mur removes only a store's own folder", dir)
	}
	lock := home.StateLock(homeDir, name)
	release, ok, err := grant.TryHoldStateFile(lock)
	if err != nil {
		return diag.New("E-CAP-009", "the state store %s at %s cannot be used: %v", name, dir, err)
	}
	if !ok {
		return diag.New("E-CFG-011", "the state store %s is in use: a component call holds it now", name).
			WithHint("run it again once the call has ended")
	}
	defer release()
	bytes, _ := grant.WorkdirBytes(dir)
	// The folder first, then the lock file, the lock held throughout: a
	// call waiting on it finds a fresh lock file and an empty store.
	if err := snapshot.Remove(dir); err != nil {
		return diag.Wrap(err, "E-IO-002", "cannot remove the state store %s", dir)
	}
	if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return diag.Wrap(err, "E-IO-002", "cannot remove the lock file %s", lock)
	}
	if asJSON {
		b, err := json.Marshal(struct {
			Removed string `json:"removed"`
			Path    string `json:"path"`
			Bytes   int64  `json:"bytes"`
		}{name, dir, bytes})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	_, err = fmt.Fprintf(stdout, "removed the state store %s (%s, %d bytes)\n", name, dir, bytes)
	return err
}
