package launch

import (
	"os"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/remote"
)

// helperExe is the executable mur-driver is looked for beside; a test points
// it at a built mur.
var helperExe = os.Executable

// startProvider runs a provider built-in in the mur-driver helper beside this
// executable (remote's package doc says why it is not in mur itself).
func startProvider(cfg driver.Config) (driver.Driver, error) {
	exe, err := helperExe()
	if err != nil {
		return nil, diag.Wrap(err, remote.CodeHelper, "the built-in driver %s runs in %s, and mur cannot tell where it is installed", cfg.Name, remote.HelperName)
	}
	path, err := remote.Find(exe, cfg.Name)
	if err != nil {
		return nil, err
	}
	return remote.Start(path, cfg)
}
