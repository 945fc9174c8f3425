// Package builtin constructs the drivers built into mur by name
// (docs/drivers.md): murmur/driver-anthropic, murmur/driver-openai and murmur/driver-replay,
// each at whatever version the manifest asks for. Resolution order — project
// store, global store, then these — is the caller's: a stored artifact of the
// exact name and version wins over a built-in.
//
// This package links no provider SDK: the two provider built-ins are named
// here but constructed by package providers, which mur-driver and a plain mur
// build link and a mur built with the murdriver tag does not
// (internal/launch's provider_*.go; internal/driver/remote). The replay driver
// is constructed here.
package builtin

import (
	"path/filepath"
	"sort"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/replay"
)

// SettingTranscript is the replay entry's config key naming its transcript.
const SettingTranscript = "transcript"

// The provider built-ins' names (anthropic.Name and openai.Name, which this
// package does not import; a test keeps them equal).
const (
	AnthropicName = "murmur/driver-anthropic"
	OpenAIName    = "murmur/driver-openai"
)

type constructor func(driver.Config) (driver.Driver, error)

// builtins maps every built-in's name to its constructor here; a provider's
// is nil: it is constructed by package providers.
var builtins = map[string]constructor{
	AnthropicName: nil,
	OpenAIName:    nil,
	replay.Name:   newReplay,
}

// Has reports whether name is a built-in driver.
func Has(name string) bool { _, ok := builtins[name]; return ok }

// Provider reports whether name is a provider built-in, the kind New does not
// construct (package providers does).
func Provider(name string) bool { c, ok := builtins[name]; return ok && c == nil }

// Names lists the built-in drivers, sorted.
func Names() []string {
	out := make([]string, 0, len(builtins))
	for n := range builtins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NeedsKey reports whether the built-in sends a key (the replay driver does
// not, so its entry needs no gateway).
func NeedsKey(name string) bool { return name != replay.Name }

// New constructs the built-in cfg.Name names. ok is false when it names none
// or names a provider built-in (Provider).
func New(cfg driver.Config) (d driver.Driver, ok bool, err error) {
	c := builtins[cfg.Name]
	if c == nil {
		return nil, false, nil
	}
	d, err = c(cfg)
	return d, true, err
}

func newReplay(cfg driver.Config) (driver.Driver, error) {
	p, _ := cfg.Settings[SettingTranscript].(string)
	if p == "" {
		return nil, diag.New(replay.CodeUnreadable, "%s: the driver entry has no config.transcript", replay.Name).
			WithHint("add `config: {transcript: transcript.yaml}` to the %s entry under artifacts:", replay.Name)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cfg.Dir, p)
	}
	return replay.New(cfg.Name, cfg.Version, p)
}
