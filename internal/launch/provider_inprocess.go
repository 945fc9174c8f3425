//go:build !murdriver

package launch

import (
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
)

// ProviderBuild (a word, for mur doctor --json) and ProviderBuildText (for
// a person) say how this mur runs the provider built-ins
// (murmur/driver-anthropic, murmur/driver-openai). This is the plain build
// (no murdriver tag): they are linked into mur and run in its own process,
// so mur needs no other binary for them (docs/drivers.md).
const (
	ProviderBuild     = "in-process"
	ProviderBuildText = "the provider drivers are built into mur"
)

// ProviderProblem is why the provider built-in name cannot run with this
// mur, or nil. The plain build links them, so it is always nil.
func ProviderProblem(name string) error { return nil }

// pinProviderHelper has nothing to pin: the providers are in this binary.
func pinProviderHelper() {}

func startProvider(cfg driver.Config) (driver.Driver, error) {
	d, _, err := providers.New(cfg)
	return d, err
}
