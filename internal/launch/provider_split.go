//go:build murdriver

package launch

import (
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/remote"
)

// ProviderBuild (a word, for mur doctor --json) and ProviderBuildText (for
// a person) say how this mur runs the provider built-ins
// (murmur/driver-anthropic, murmur/driver-openai). This is the split build
// (-tags murdriver, what scripts/install.sh ships): mur links neither SDK and
// runs them in the mur-driver helper installed beside it
// (internal/driver/remote/RATIONALE.md).
const (
	ProviderBuild     = "murdriver"
	ProviderBuildText = "the provider drivers run in mur-driver beside mur"
)

// ProviderProblem is why the provider built-in name cannot run with this
// mur, or nil: E-RUN-059 when mur-driver is not beside the executable.
func ProviderProblem(name string) error {
	_, err := remote.Locate(name)
	return err
}

// pinProviderHelper opens mur-driver once, at the run's start (remote.Pin).
func pinProviderHelper() { remote.Pin() }

func startProvider(cfg driver.Config) (driver.Driver, error) {
	path, err := remote.Locate(cfg.Name)
	if err != nil {
		return nil, err
	}
	return remote.Start(path, cfg)
}
