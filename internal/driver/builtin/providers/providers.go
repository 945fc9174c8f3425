// Package providers constructs the provider built-ins, murmur/driver-anthropic
// and murmur/driver-openai, and links their SDKs. cmd/mur-driver imports it,
// and so does a plain mur build (internal/launch/provider_inprocess.go); a mur
// built with the murdriver tag reaches these drivers through the helper
// instead (internal/driver/remote), so it never pays for the SDKs' start.
package providers

import (
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/anthropic"
	"github.com/murmur-go/murmur/internal/driver/builtin"
	"github.com/murmur-go/murmur/internal/driver/openai"
)

// New constructs the built-in cfg.Name names, a provider or the replay
// driver. ok is false when it names none.
func New(cfg driver.Config) (d driver.Driver, ok bool, err error) {
	switch cfg.Name {
	case anthropic.Name:
		d, err = anthropic.New(cfg)
	case openai.Name:
		d, err = openai.New(cfg)
	default:
		return builtin.New(cfg)
	}
	if err != nil {
		return nil, true, err
	}
	return d, true, nil
}
