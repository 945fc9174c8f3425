// Package builtin constructs the drivers built into mur by name (contracts
// §14): murmur/driver-anthropic, murmur/driver-openai and murmur/driver-replay,
// each at whatever version the manifest asks for. Resolution order — project
// store, global store, then these — is the caller's: a stored artifact of the
// exact name and version wins over a built-in.
//
// Importing this package links both provider SDKs; the agent loop imports it
// and nothing else needs to.
package builtin

import (
	"path/filepath"
	"sort"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/anthropic"
	"github.com/murmur-go/murmur/internal/driver/openai"
	"github.com/murmur-go/murmur/internal/driver/replay"
)

// SettingTranscript is the replay entry's config key naming its transcript.
const SettingTranscript = "transcript"

type constructor func(driver.Config) (driver.Driver, error)

var builtins = map[string]constructor{
	anthropic.Name: func(c driver.Config) (driver.Driver, error) { return anthropic.New(c) },
	openai.Name:    func(c driver.Config) (driver.Driver, error) { return openai.New(c) },
	replay.Name:    newReplay,
}

// Has reports whether name is a built-in driver.
func Has(name string) bool { _, ok := builtins[name]; return ok }

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

// New constructs the built-in cfg.Name names. ok is false when it names none.
func New(cfg driver.Config) (d driver.Driver, ok bool, err error) {
	c, ok := builtins[cfg.Name]
	if !ok {
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
