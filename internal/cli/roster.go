package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/launch"
	"github.com/murmur-go/murmur/internal/manifest"
)

// runRosterCmd is mur run --roster: admission, then the launcher
// (docs/formations.md). It takes --task, --json and --containment only.
func runRosterCmd(cmd *cobra.Command, args []string, f runFlags, stdout, stderr io.Writer) error {
	var other []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "roster", "task", "json", "containment":
		default:
			other = append(other, "--"+fl.Name)
		}
	})
	if len(args) > 0 {
		other = append(other, args[0])
	}
	if len(other) > 0 {
		return usageError{fmt.Errorf("--roster combines with --task, --json and --containment only, not %s", strings.Join(other, ", "))}
	}
	switch f.containment {
	case "", manifest.ContainmentAdvisory, manifest.ContainmentScoped, manifest.ContainmentSealed:
	default:
		return usageError{fmt.Errorf("--containment must be advisory, scoped or sealed, not %q", f.containment)}
	}
	if id, _ := os.LookupEnv(delegate.EnvFormationID); strings.TrimSpace(id) != "" {
		return diag.New("E-RUN-046", "mur run --roster cannot start inside a formation member (%s is set)", delegate.EnvFormationID).
			WithHint("a formation's members call each other with call-member; start formations from a shell")
	}
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	r, err := formation.Load(f.roster)
	if err != nil {
		return err
	}
	a, err := formation.Admit(r, homeDir)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	status, err := launch.RunFormation(ctx, launch.FormationRequest{Admitted: a, Task: f.task, JSON: f.json,
		Containment: f.containment, Home: homeDir, Stdout: stdout, Stderr: stderr})
	if err != nil {
		return err
	}
	if status != 0 {
		return exitStatus(status)
	}
	return nil
}
