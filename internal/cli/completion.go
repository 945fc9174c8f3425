package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/store"
)

// Dynamic shell completion (cobra's __complete, which the scripts of
// 'mur completion SHELL' call): session ids and @N for the commands that
// take a session, --containment's classes, and the capsules of the global
// store for --capsule. Each reads only what a listing would; an error
// completes nothing rather than print.

// maxOrdinals bounds the @N offered: a person reaches for recent sessions.
const maxOrdinals = 20

// completeRunningSessions offers the ids of the live sessions in
// ~/.murmur/running, and @N for each of this project's that is among them.
func completeRunningSessions(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	homeDir, err := home.Dir()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	entries, _ := running.Scan(home.Running(homeDir))
	live := map[string]bool{}
	var out []string
	for _, e := range entries {
		if e.State != running.Live {
			continue
		}
		live[e.Record.SessionID] = true
		out = append(out, fmt.Sprintf("%s\t%s@%s, pid %d", e.Record.SessionID, e.Record.CapsuleName, e.Record.CapsuleVersion, e.Record.PID))
	}
	if _, list, err := projectSessions(homeDir); err == nil {
		for i, id := range list {
			if i < maxOrdinals && live[id] {
				out = append(out, fmt.Sprintf("@%d\t%s", i+1, id))
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeRecordedSessions offers @N and the ids of this project's
// recorded sessions, newest first; paths too when the command takes one.
func completeRecordedSessions(paths bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	directive := cobra.ShellCompDirectiveNoFileComp
	if paths {
		directive = cobra.ShellCompDirectiveDefault
	}
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		homeDir, err := home.Dir()
		if err != nil {
			return nil, directive
		}
		_, list, err := projectSessions(homeDir)
		if err != nil {
			return nil, directive
		}
		var out []string
		if strings.HasPrefix(toComplete, "@") {
			for i, id := range list {
				if i == maxOrdinals {
					break
				}
				out = append(out, fmt.Sprintf("@%d\t%s", i+1, id))
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		for i, id := range list {
			desc := ""
			if n := ordinalOf(list, id); n != "" && i < maxOrdinals {
				desc = "\t" + n
			}
			out = append(out, id+desc)
		}
		return out, directive
	}
}

// completeContainment offers --containment's classes, lowest first.
func completeContainment(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{
		manifest.ContainmentAdvisory + "\tseccomp allow-list, rlimits, cgroups",
		manifest.ContainmentScoped + "\tadvisory plus Landlock over the host's files",
		manifest.ContainmentSealed + "\tscoped plus namespaces over a composed root",
	}, cobra.ShellCompDirectiveNoFileComp
}

// completeStoreCapsules offers the capsules of the global store (what
// --capsule runs), each once with its newest version.
func completeStoreCapsules(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	byName := map[string][]string{}
	var names []string
	for _, e := range globalCapsules() {
		if _, seen := byName[e.Name]; !seen {
			names = append(names, e.Name)
		}
		byName[e.Name] = append(byName[e.Name], e.Version)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, n+"\tnewest "+newestVersion(byName[n]))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeCapsuleVersions offers the installed versions of --capsule.
func completeCapsuleVersions(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	name, _ := cmd.Flags().GetString("capsule")
	full, err := manifest.NormalizeName(name)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, e := range globalCapsules() {
		if e.Name == full {
			out = append(out, e.Version)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// globalCapsules lists the capsules (runtime capsule) of the global store,
// sorted by name then version; nil when it cannot be read.
func globalCapsules() []store.Entry {
	homeDir, err := home.Dir()
	if err != nil {
		return nil
	}
	all, err := store.Global(homeDir).List()
	if err != nil {
		return nil
	}
	var out []store.Entry
	for _, e := range all {
		if e.Problem == "" && e.Runtime == manifest.RuntimeCapsule {
			out = append(out, e)
		}
	}
	return out
}
