package manifest

import (
	"fmt"
	"strings"
	"time"
)

// Lines renders a grant set for a person: one "label  value" line per axis,
// every axis present (an empty one says "none"), in the order the manifest
// schema lists them. `mur run --explain-scope` prints these, and MURMUR.md
// lists them, so a capsule and the person running it read the same words.
func (g GrantSet) Lines() []string {
	fs := "the whole work folder"
	if g.FilesystemScope != nil && *g.FilesystemScope != "." && *g.FilesystemScope != "" {
		fs = strings.TrimSuffix(*g.FilesystemScope, "/") + "/ inside the work folder"
	}
	containment := "none declared (ranks as advisory)"
	if g.Containment != "" {
		containment = g.Containment
	}
	l := g.Limits
	rows := [][2]string{
		{"network", listOrNone(g.NetworkAllow)},
		{"unix sockets", yesNo(g.UnixSockets)},
		{"peer fetch", listOrNone(g.PeerFetchAllow)},
		{"shell", listOrNone(g.ShellAllow)},
		{"spawn", listOrNone(g.SpawnAllow)},
		{"spawn workdir snapshot", listOrNone(g.WorkdirSnapshot)},
		{"env", listOrNone(g.EnvAllow)},
		{"filesystem", fs},
		{"workdir exec", yesNo(g.WorkdirExec)},
		{"install tool", listOrNone(g.InstallTool)},
		{"install skill", listOrNone(g.InstallSkill)},
		{"containment", containment},
		{"deadline", fmt.Sprintf("%d s per component call, %d s per hook call", l.DeadlineSeconds, l.HookDeadlineSeconds)},
		{"memory", bytesText(l.MemoryBytes) + " per linear memory"},
		{"tables", fmt.Sprintf("%d elements", l.TableElements)},
		{"instances", fmt.Sprintf("%d", l.Instances)},
		{"work folder size", bytesText(l.WorkdirMaxBytes)},
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%-23s %s", r[0]+":", r[1])
	}
	return out
}

// Lines renders the whole effective grant set for a person: the capsule's
// own grants, then each artifact's (saying "the capsule's grants" when
// narrowing changed nothing, else its differing lines and what was dropped),
// then the state stores.
func (g Grants) Lines() []string {
	out := []string{"capsule grants:"}
	for _, l := range g.Capsule.Lines() {
		out = append(out, "  "+l)
	}
	if len(g.Artifacts) == 0 {
		out = append(out, "artifact grants: no artifacts declared")
	} else {
		out = append(out, "artifact grants:")
	}
	capLines := g.Capsule.Lines()
	for _, a := range g.Artifacts {
		head := fmt.Sprintf("  %s@%s (%s)", a.Name, a.Version, a.Runtime)
		var diff []string
		for i, l := range a.Grants.Lines() {
			if l != capLines[i] {
				diff = append(diff, "    "+l)
			}
		}
		if len(diff) == 0 && len(a.Dropped) == 0 {
			out = append(out, head+": the capsule's grants")
		} else {
			out = append(out, head+": the capsule's grants, except")
			out = append(out, diff...)
		}
		for _, d := range a.Dropped {
			out = append(out, "    dropped "+d+" (not granted to the capsule)")
		}
		if a.StateStore != "" {
			out = append(out, "    state store "+a.StateStore)
		}
	}
	out = append(out, "state stores: "+listOrNone(g.StateStores))
	out = append(out, "plan submit: "+yesNo(g.Plan.Submit))
	pf := "none"
	if f := g.PeerFiles; f != nil {
		pf = fmt.Sprintf("%s/ inside the work folder (handles live at most %s, files up to %s)", f.Root, time.Duration(f.MaxTTLS)*time.Second, bytesText(f.MaxBytes))
	}
	out = append(out, "peer files: "+pf)
	return append(out, g.stateLines()...)
}

// stateLines are the state stores, one "<artifact>: <store> -> $HOME/.murmur/state/<store>"
// line per artifact that opens one (its component alone sees it), or
// "state stores: none".
func (g Grants) stateLines() []string {
	var lines []string
	for _, a := range g.Artifacts {
		if a.StateStore != "" {
			lines = append(lines, fmt.Sprintf("  %s: %s -> $HOME/.murmur/state/%s", a.Name, a.StateStore, a.StateStore))
		}
	}
	if len(lines) == 0 {
		return []string{"state stores: none"}
	}
	return append([]string{"state stores:"}, lines...)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// bytesText prints a byte count in the largest binary unit that divides it
// exactly (512 MiB, 10 GiB), else in bytes.
func bytesText(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n > 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
