package launch

import (
	"fmt"
	"os"
	"path/filepath"

	wasmdrv "github.com/murmur-go/murmur/internal/driver/wasm"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// DriverPlan is an agent capsule's driver as the launch resolved it.
type DriverPlan struct {
	// Entry is the artifacts[] entry inference.driver.artifact names.
	Entry manifest.Artifact
	// Stored is the driver artifact a store holds at exactly that name and
	// version (it wins over a built-in); nil selects the built-in.
	Stored *store.Resolved
}

// prepareAgent resolves the driver and reads the configured system prompt.
func (p *Plan) prepareAgent() error {
	in := p.Manifest.Inference
	if in.Transport.Or("http") != "http" {
		return diag.New("E-RUN-047", "%s asks for inference.transport %s; this mur runs the http transport only (a driver artifact per turn)", p.Manifest.Name, in.Transport.V).
			WithHint("remove inference.transport, or set it to http, and name a driver in inference.driver.artifact")
	}
	if in.DriverArtifact == "" {
		return diag.New("E-RUN-047", "%s is an agent capsule with no driver: inference.driver.artifact is not set", p.Manifest.Name).
			WithHint("declare a driver under artifacts: (for example murmur/driver-anthropic, runtime: driver) and name it in inference.driver.artifact")
	}
	entry, ok := p.Manifest.ArtifactByName(in.DriverArtifact)
	if !ok || entry.RuntimeKind() != manifest.RuntimeDriver {
		// Parse refuses this already; a plan built by other means must too.
		return diag.New("E-MAN-016", "inference.driver.artifact: %q is not an artifact declared with runtime: driver", in.DriverArtifact)
	}
	d := &DriverPlan{Entry: *entry}
	r, err := p.Stores.Resolve(entry.Name, entry.Version, manifest.Options{SkipSecrets: true})
	switch {
	case err == nil:
		if r.Runtime != manifest.RuntimeDriver {
			return diag.New("E-RUN-047", "the driver %s@%s in the %s store is a %s, not a driver", entry.Name, entry.Version, r.Store.Kind, r.Runtime).
				WithHint("install the driver artifact of that name, or name another driver in inference.driver.artifact")
		}
		d.Stored = r
	case store.IsNotFound(err):
		if !builtin.Has(entry.Name) {
			return diag.New("E-RUN-047", "the driver %s@%s is not installed and is not built into mur (built in: %v)", entry.Name, entry.Version, builtin.Names()).
				WithHint("publish and install the driver's .mur.zip, or use a built-in driver")
		}
	default:
		return err
	}
	p.Driver = d
	switch {
	case in.SystemPrompt != "":
		p.SystemPrompt = in.SystemPrompt
	case in.SystemPromptFile != "":
		b, err := p.readPackedFile(in.SystemPromptFile)
		if err != nil {
			return diag.Wrap(err, "E-RUN-048", "inference.system_prompt_file %s cannot be read", in.SystemPromptFile).
				WithHint("the path is relative to murmur.yaml; 'mur build' packs the file")
		}
		p.SystemPrompt = string(b)
	}
	return nil
}

// readPackedFile reads a file the manifest names relative to itself: from
// the manifest's directory, or from the installed archive of a --capsule run.
func (p *Plan) readPackedFile(rel string) ([]byte, error) {
	if p.capsule {
		return p.installed.Archive.ReadFile(filepath.ToSlash(filepath.Clean(rel)))
	}
	if filepath.IsAbs(rel) {
		return os.ReadFile(rel)
	}
	return os.ReadFile(filepath.Join(p.ManifestDir, rel))
}

// newDriver makes the plan's driver, once and before the session exists,
// so one that cannot load is refused without leaving a session behind: a
// stored driver component through the WASM adapter (bindDriver gives it
// the session later), or the built-in of that name.
func (p *Plan) newDriver(eng *wasmhost.Engine) (driver.Driver, error) {
	d := p.Driver
	cfg := driver.Config{Name: d.Entry.Name, Version: d.Entry.Version, Settings: d.Entry.Config, Dir: p.ManifestDir}
	if cfg.Dir == "" {
		cfg.Dir = "."
	}
	if g := d.Entry.Gateway; g != nil {
		cfg.Endpoint, cfg.APIKey = g.Endpoint, g.APIKey
		cfg.KeyVariable = keyVariable(g.APIKeyRef)
	}
	if cfg.Settings == nil {
		cfg.Settings = map[string]any{}
	}
	if r := d.Stored; r != nil {
		file, ok := r.Archive.PayloadName()
		if !ok || filepath.Ext(file) != ".wasm" {
			return nil, diag.New(wasmdrv.CodeUnloadable, "the driver %s holds no root .wasm component", r.Ref()).
				WithHint("rebuild it with 'mur build' from a directory holding the driver's component")
		}
		data, err := r.Archive.ReadFile(file)
		if err != nil {
			return nil, err // E-REG-002: the artifact changed since it was resolved
		}
		ag := tools.GrantOf(p.Grants, d.Entry)
		wc := wasmdrv.Config{Engine: eng, Name: r.Name, Version: r.Version, Component: data, ArtifactSHA256: r.SHA256,
			Limits: grant.Limits(ag.Grants.Limits),
			Model:  p.Manifest.Inference.Model, Endpoint: cfg.Endpoint, APIKey: cfg.APIKey, Settings: cfg.Settings}
		if st := ag.StateStore; st != "" {
			// A stored driver is among the components that see the store
			// its artifact declares (made and checked by Prepare).
			wc.State = &grant.StateCall{Name: st, Dir: home.StateStore(p.Home, st), Lock: home.StateLock(p.Home, st),
				MaxBytes: p.Manifest.Capabilities.Resources.StateMaxBytes.Or(manifest.DefaultStateMaxBytes)}
		}
		return wasmdrv.New(wc)
	}
	if p.capsule {
		// An installed capsule's relative config paths name files packed in
		// its archive (requires_files), not files beside the work folder.
		cleanup, err := p.unpackSetting(&cfg, builtin.SettingTranscript)
		if err != nil {
			return nil, err
		}
		defer cleanup()
	}
	if builtin.Provider(cfg.Name) {
		return startProvider(cfg)
	}
	drv, ok, err := builtin.New(cfg)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, diag.New("E-RUN-047", "the driver %s@%s is not built into mur", d.Entry.Name, d.Entry.Version)
	}
	return drv, nil
}

// bindDriver gives a stored driver the session's identity (its
// environment) and the recorder of its call_deadline lines.
func bindDriver(drv driver.Driver, sess *session.Session, rec *trace.Recorder) {
	if d, ok := drv.(*wasmdrv.Driver); ok {
		d.Bind(sess, rec)
	}
}

// unpackSetting copies the packed file a --capsule run's relative path
// setting names to a private temporary file and points a copy of the
// settings at it; the built-in reads it whole when it is made, so cleanup
// removes it right after. A path the archive does not hold is left as it
// is, for the driver's own message.
func (p *Plan) unpackSetting(cfg *driver.Config, key string) (func(), error) {
	rel, _ := cfg.Settings[key].(string)
	if rel == "" || filepath.IsAbs(rel) {
		return func() {}, nil
	}
	data, err := p.readPackedFile(rel)
	if err != nil {
		return func() {}, nil
	}
	f, err := os.CreateTemp("", "murmur-packed-*"+filepath.Ext(rel))
	if err != nil {
		return nil, fmt.Errorf("launch: unpacking %s from the installed capsule: %w", rel, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("launch: unpacking %s from the installed capsule: %w", rel, werr)
	}
	settings := make(map[string]any, len(cfg.Settings))
	for k, v := range cfg.Settings {
		settings[k] = v
	}
	settings[key] = f.Name()
	cfg.Settings = settings
	return func() { os.Remove(f.Name()) }, nil
}

// keyVariable is NAME of a "${NAME}" reference ("" for a literal key).
func keyVariable(ref string) string {
	if len(ref) > 3 && ref[:2] == "${" && ref[len(ref)-1] == '}' {
		return ref[2 : len(ref)-1]
	}
	return ""
}
