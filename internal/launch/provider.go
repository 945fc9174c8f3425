package launch

import (
	"os"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/remote"
)

// startProvider runs a provider built-in in the mur-driver helper beside this
// executable (remote's package doc says why it is not in mur itself).
func startProvider(cfg driver.Config) (driver.Driver, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, diag.Wrap(err, remote.CodeHelper, "the built-in driver %s runs in %s, and mur cannot tell where it is installed", cfg.Name, remote.HelperName)
	}
	path, err := remote.Find(exe, cfg.Name)
	if err != nil {
		return nil, err
	}
	return remote.Start(path, cfg)
}
