package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/manifest"
)

// runExamples is mur run's Examples: section.
const runExamples = `  mur run --task "say hi"                 # the project of this directory
  mur run ./hello-agent --task task.md     # a project directory (or its murmur.yaml)
  mur run --capsule acme/worker --capsule-version 1.0.0 --json
  mur run --explain-scope --containment sealed
  mur run --with-roost --task "delegate"   # a delegating capsule: mur-roost started and ended with the run`

// decorateRunCmd adds to mur run what is not the run itself: its examples
// and the completion of its flags' values.
func decorateRunCmd(cmd *cobra.Command) {
	cmd.Example = runExamples
	_ = cmd.RegisterFlagCompletionFunc("containment", completeContainment)
	_ = cmd.RegisterFlagCompletionFunc("capsule", completeStoreCapsules)
	_ = cmd.RegisterFlagCompletionFunc("capsule-version", completeCapsuleVersions)
	_ = cmd.RegisterFlagCompletionFunc("spawn-allow", completeStoreCapsules)
}

// runArgs reads mur run's positional argument and --capsule: the project
// may be given as DIR or FILE instead of --manifest. --capsule and
// --capsule-version go together (they are one pair in docs/running-capsules.md, so
// a run never picks a version nobody named); half of the pair is a usage
// error that lists the installed versions and names the newest.
func runArgs(cmd *cobra.Command, args []string, f *runFlags, stderr io.Writer) error {
	if f.capsule == "" && f.capsuleVersion != "" {
		return usageError{fmt.Errorf("--capsule-version needs --capsule: it names the version of an installed capsule")}
	}
	if len(args) == 1 {
		switch {
		case cmd.Flags().Changed("manifest"):
			return usageError{fmt.Errorf("give the project once: as %s or as --manifest, not both", args[0])}
		case f.capsule != "":
			return usageError{fmt.Errorf("--capsule runs an installed capsule with no project: drop %s", args[0])}
		}
		if err := cmd.Flags().Set("manifest", args[0]); err != nil {
			return usageError{err}
		}
	}
	if f.capsule == "" || f.capsuleVersion != "" {
		return nil
	}
	full, err := manifest.NormalizeName(f.capsule)
	if err != nil {
		return usageError{fmt.Errorf("--capsule %q: %v", f.capsule, err)}
	}
	var versions []string
	for _, e := range globalCapsules() {
		if e.Name == full {
			versions = append(versions, e.Version)
		}
	}
	if len(versions) == 0 {
		return usageError{fmt.Errorf("--capsule needs --capsule-version; no version of %s is installed ('mur list -g' lists what is)", full)}
	}
	return usageError{fmt.Errorf("--capsule needs --capsule-version; %s has %s installed: give one, e.g. --capsule-version %s",
		full, strings.Join(versions, ", "), newestVersion(versions))}
}

// newestVersion is the highest of versions by version order: dotted
// numbers compare as numbers (1.10.0 after 1.9.0), other parts as text, and
// a version with a pre-release part (1.0.0-rc1) before the same one without.
func newestVersion(versions []string) string {
	best := ""
	for _, v := range versions {
		if best == "" || compareVersions(v, best) > 0 {
			best = v
		}
	}
	return best
}

func compareVersions(a, b string) int {
	a = strings.TrimPrefix(a, "v")
	b = strings.TrimPrefix(b, "v")
	ac, apre, _ := strings.Cut(strings.SplitN(a, "+", 2)[0], "-")
	bc, bpre, _ := strings.Cut(strings.SplitN(b, "+", 2)[0], "-")
	if c := compareDotted(ac, bc); c != 0 {
		return c
	}
	switch {
	case apre == bpre:
		return strings.Compare(a, b)
	case apre == "":
		return 1
	case bpre == "":
		return -1
	}
	return compareDotted(apre, bpre)
}

func compareDotted(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		if i >= len(as) {
			return -1
		}
		if i >= len(bs) {
			return 1
		}
		x, y := as[i], bs[i]
		xn, xerr := strconv.ParseUint(x, 10, 64)
		yn, yerr := strconv.ParseUint(y, 10, 64)
		switch {
		case xerr == nil && yerr == nil:
			if xn != yn {
				if xn < yn {
					return -1
				}
				return 1
			}
		case xerr == nil: // a number ranks below text
			return -1
		case yerr == nil:
			return 1
		default:
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		}
	}
	return 0
}
