package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/launch"
	"github.com/murmur-go/murmur/internal/version"
)

func init() { register(newVersionCmd) }

// versionInfo is what mur version prints: enough to tell two builds apart
// (the revision) and how this one runs the provider drivers (doctor's build line).
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Build    string `json:"build"`
	Go       string `json:"go"`
}

func newVersionCmd(stdout, _ io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print mur's version, the revision it was built from, and its build",
		Long: `Print mur's version, the VCS revision it was built from ("+modified" for a
tree with uncommitted changes, "devel" when the build recorded none), how it
runs the provider drivers (in-process, or murdriver: in mur-driver beside mur,
as mur doctor's build line says) and the Go release it was built with.
'mur --version' prints the first line only.`,
		Example: `  mur version
  mur version --json`,
		Args: exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			v := versionInfo{Version: version.Version, Revision: version.Revision(), Build: launch.ProviderBuild, Go: runtime.Version()}
			if asJSON {
				b, _ := json.Marshal(v)
				_, err := fmt.Fprintln(stdout, string(b))
				return err
			}
			_, err := fmt.Fprintf(stdout, "mur %s\nrevision  %s\nbuild     %s: %s\ngo        %s\n",
				v.Version, v.Revision, v.Build, launch.ProviderBuildText, v.Go)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: version, revision, build, go")
	return cmd
}
