package launch

import (
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/remote"
)

// startProvider runs a provider built-in in the mur-driver helper beside this
// executable (remote's package doc says why it is not in mur itself).
func startProvider(cfg driver.Config) (driver.Driver, error) {
	path, err := remote.Locate(cfg.Name)
	if err != nil {
		return nil, err
	}
	return remote.Start(path, cfg)
}
