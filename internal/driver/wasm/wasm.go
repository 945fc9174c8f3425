// Package wasm is the driver adapter for stored driver components
// (docs/drivers.md): a .mur.zip with runtime: driver whose component exports
// murmur:tool/run@0.1.0 (world driver). The agent loop sees it as one more
// driver.Driver: each turn's normalized request goes in, as JSON, in
// tool-input.data, and the normalized response comes back, as JSON, in
// tool-result.data.
//
// Every Call runs in a fresh instance of the component (compiled once, in
// New), bounded by the execution limits the caller gives, with no filesystem,
// an environment of the session identity and MURMUR_INFERENCE_*, and
// wasi:http to the gateway endpoint only, the key swapped in there.
// murmur:text/chunks calls stream to the call's ChunkFunc as they happen.
//
// A stored driver may hold the conversation itself: when its result's
// metadata holds continuation_id, the next turn of the same task sends that
// id and only the messages added since. driver.Continuation is the loop's helper
// for that.
package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// RunCall names the call a driver's deadline stops, in call_deadline lines.
const RunCall = wit.IfaceToolRun + "#" + wit.RunFunc

// MetadataContinuationID is the tool-result metadata key a stateful driver
// answers its continuation id under.
const MetadataContinuationID = "continuation_id"

// DefaultKeyPlaceholder is the value of MURMUR_INFERENCE_API_KEY when the
// config names none: a string that is not a key, which the host's egress
// replaces with the real key in a request to the gateway endpoint only.
const DefaultKeyPlaceholder = "murmur-inference-api-key-placeholder"

// The environment names a driver component is given besides the identity.
const (
	EnvModel        = "MURMUR_INFERENCE_MODEL"
	EnvEndpoint     = "MURMUR_INFERENCE_ENDPOINT"
	EnvAPIKey       = "MURMUR_INFERENCE_API_KEY"
	EnvDriverConfig = "MURMUR_INFERENCE_DRIVER_CONFIG"
)

// CodeUnloadable is the diagnostic of a stored driver New cannot use.
const CodeUnloadable = "E-RUN-089"

// DeadlineRecorder receives the call_deadline line a driver's deadline leaves
// when it passed while the component waited on the runtime (a host call, a
// WASI clock or HTTP wait). *trace.Recorder is one.
type DeadlineRecorder interface {
	CallDeadline(component, call string, deadline time.Duration)
}

// Config is one stored driver as the caller resolved it, and what its runs
// are given.
type Config struct {
	// Engine compiles and runs the component; it outlives the driver.
	Engine *wasmhost.Engine
	// Name, Version and SHA256 identify the artifact; SHA256 is the hex digest
	// of Component, computed when empty.
	Name, Version, SHA256 string
	// ArtifactSHA256 is the digest of the stored artifact's .mur.zip, what
	// Info reports (docs/stores.md: an artifact's content hash is its
	// zip's); empty: SHA256, for a component that comes from no store.
	ArtifactSHA256 string
	// Component is the component's bytes (binary, or WAT for tests).
	Component []byte
	// Limits bounds every call (grant.Limits of the entry's effective
	// limits); the engine refuses a zero field.
	Limits wasmhost.Limits
	// Session gives the session's identity (its MURMUR_* variables); nil
	// gives none.
	Session *session.Session
	// Model is inference.model, MURMUR_INFERENCE_MODEL.
	Model string
	// Endpoint is gateway.endpoint, MURMUR_INFERENCE_ENDPOINT.
	Endpoint string
	// KeyPlaceholder is MURMUR_INFERENCE_API_KEY; "" is DefaultKeyPlaceholder.
	// It is never the real key.
	KeyPlaceholder string
	// Settings is the entry's config map, MURMUR_INFERENCE_DRIVER_CONFIG as
	// JSON ({} when nil).
	Settings map[string]any
	// APIKey is gateway.api_key as resolved: never in the component's
	// environment, only put in place of the placeholder in the x-api-key
	// or authorization header of a request to Endpoint (docs/drivers.md).
	APIKey string
	// HTTP decides the component's wasi:http requests; nil is the gateway
	// grant (wit.Gateway of Endpoint, the placeholder and APIKey): the
	// endpoint's origin only, with the key swap (docs/drivers.md).
	HTTP wit.HTTPPolicy
	// Recorder receives call_deadline lines; nil records none (the error of
	// such a call still says so: see Ending).
	Recorder DeadlineRecorder
	// Logger receives the wasi:http and chunk log lines; nil is slog.Default().
	Logger *slog.Logger
	// State, when set, is the state store the driver's artifact declares
	// (capabilities.state): every call sees it as the preopened directory
	// "state" (and "/state"), its only filesystem, and runs holding the
	// store's lock, measured against its MaxBytes before, during and as it
	// ends (docs/running-capsules.md, "State stores").
	State *grant.StateCall
}

// Driver is a stored driver component, compiled once and instantiated afresh
// for every turn. It is safe for concurrent calls.
type Driver struct {
	eng    *wasmhost.Engine
	comp   *wasmhost.Component
	info   driver.Info
	limits wasmhost.Limits
	env    map[string]string
	args   []string
	http   wit.HTTPPolicy
	rec    DeadlineRecorder
	log    *slog.Logger
	state  *grant.StateCall
}

var _ driver.Driver = (*Driver)(nil)

// New compiles cfg.Component and checks that it exports murmur:tool/run. A
// component that cannot be compiled or exports no run is E-RUN-089.
func New(cfg Config) (*Driver, error) {
	if cfg.Engine == nil {
		return nil, errors.New("wasm driver: Config.Engine is nil")
	}
	settings := cfg.Settings
	if settings == nil {
		settings = map[string]any{}
	}
	conf, err := json.Marshal(settings)
	if err != nil {
		return nil, diag.Wrap(err, CodeUnloadable, "driver %s: its config cannot be written as JSON for %s", cfg.Name, EnvDriverConfig).
			WithHint("give the entry's config plain YAML values (maps, lists, strings, numbers, booleans)")
	}
	sum := cfg.SHA256
	if sum == "" {
		h := sha256.Sum256(cfg.Component)
		sum = hex.EncodeToString(h[:])
	}
	// sum is the hash of exactly these bytes: it names the compile cache's
	// entry, so the component is not hashed a second time.
	comp, err := cfg.Engine.CompileWith(cfg.Component, wasmhost.CompileOptions{Name: cfg.Name + "@" + cfg.Version, Digest: "sha256:" + sum})
	if err != nil {
		return nil, diag.Wrap(err, CodeUnloadable, "driver %s cannot be loaded", cfg.Name).
			WithHint("rebuild it as a component of the driver world (murmur:runtime-guest/driver)")
	}
	if !wit.ExportsToolRun(comp) {
		comp.Close()
		return nil, diag.New(CodeUnloadable, "driver %s cannot be loaded: its component does not export %s with a run function", cfg.Name, wit.IfaceToolRun).
			WithHint("build it against the driver world (murmur:runtime-guest/driver)")
	}
	env := map[string]string{}
	if cfg.Session != nil {
		env = grant.Env(cfg.Session, nil, nil)
	}
	placeholder := cfg.KeyPlaceholder
	if placeholder == "" {
		placeholder = DefaultKeyPlaceholder
	}
	env[EnvModel] = cfg.Model
	env[EnvEndpoint] = cfg.Endpoint
	env[EnvAPIKey] = placeholder
	env[EnvDriverConfig] = string(conf)
	policy := cfg.HTTP
	if policy == nil {
		// The gateway grant: the endpoint's origin only, the placeholder
		// swapped for the key there and refused anywhere else.
		policy = wit.Gateway{Endpoint: cfg.Endpoint, Placeholder: placeholder, Key: cfg.APIKey}.Policy()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	infoSum := sum
	if cfg.ArtifactSHA256 != "" {
		infoSum = cfg.ArtifactSHA256
	}
	return &Driver{
		eng:    cfg.Engine,
		comp:   comp,
		info:   driver.Info{Name: cfg.Name, Version: cfg.Version, Implementation: driver.ImplementationWASM, SHA256: infoSum},
		limits: cfg.Limits,
		env:    env,
		args:   []string{manifest.Bare(cfg.Name)},
		http:   policy,
		rec:    cfg.Recorder,
		log:    log.With("driver", cfg.Name),
		state:  cfg.State,
	}, nil
}

// Bind gives a driver made before its session existed (to refuse one that
// cannot load before any session file is written) the session's identity
// and its recorder. It is called once, before the first Call.
func (d *Driver) Bind(sess *session.Session, rec DeadlineRecorder) {
	env := grant.Env(sess, nil, nil)
	maps.Copy(env, d.env)
	d.env, d.rec = env, rec
}

// Info is {name, version, "wasm", the artifact's sha256}.
func (d *Driver) Info() driver.Info { return d.info }

// Env returns a copy of the environment every call is given.
func (d *Driver) Env() map[string]string { return maps.Clone(d.env) }

// StateStore is the state store every call sees ("" for none).
func (d *Driver) StateStore() string {
	if d.state == nil {
		return ""
	}
	return d.state.Name
}

// Close releases the compiled component; calls after Close fail.
func (d *Driver) Close() error { return d.comp.Close() }

// Call runs one turn in a fresh instance: req as JSON in tool-input.data,
// the response decoded from tool-result.data and validated, ContinuationID
// set from the result's metadata. Text chunks stream to chunk (thinking
// chunks are logged, not streamed: they are not the response's text).
//
// A failure is a *driver.Error: KindCanceled for a deadline (the limits' or
// ctx's; errors.Is(err, context.DeadlineExceeded) holds) or a cancel;
// KindProvider for a trap, a resource limit, an exit, or a result whose
// status is not passed; KindMalformed for data that is not a valid response.
// Its chain holds the engine's typed ending, so grant.EndingOf(err) reads
// it back (see Ending).
func (d *Driver) Call(ctx context.Context, req *driver.Request, chunk driver.ChunkFunc) (*driver.Response, error) {
	if req == nil {
		req = &driver.Request{}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "the request cannot be written as JSON", Err: err}
	}
	in := string(data)
	rc := wasmhost.RunConfig{GoIO: goIO, Limits: d.limits, WASI: wasmhost.WASI{Args: d.args, Env: d.env}, Host: d.host(chunk)}
	if d.state != nil {
		// The store's lock for the whole call; the wait counts against
		// the call's deadline.
		sctx, done, waited, err := d.state.Open(ctx, rc.Limits.Deadline)
		if err != nil {
			return nil, d.stateEnding(ctx, err)
		}
		defer done()
		rc.Limits.Deadline -= waited
		rc.WASI.Preopens = grant.StatePreopens(d.state.Dir)
		// Go's wasi:io has no filesystem: a run that sees a store gets
		// wasmtime's wasip2 (its bodies through the spool), as a tool with
		// a filesystem does.
		rc.GoIO = false
		resp, err := d.run(sctx, rc, in)
		if sl := d.state.Final(sctx); sl != nil {
			return nil, d.stateEnding(ctx, sl)
		}
		return resp, err
	}
	return d.run(ctx, rc, in)
}

// run is one call in a fresh instance.
func (d *Driver) run(ctx context.Context, rc wasmhost.RunConfig, in string) (*driver.Response, error) {
	inst, err := d.eng.Instantiate(ctx, d.comp, rc)
	if err != nil {
		return nil, d.ending(ctx, err)
	}
	defer inst.Close()
	res, err := wit.CallToolRun(ctx, inst, wit.ToolInput{Data: &in})
	if err != nil {
		return nil, d.ending(ctx, err)
	}
	return d.response(res)
}

// stateEnding words a call the state store stopped or kept from running:
// the lock not got within the deadline (deadline_exceeded, naming the
// store), the store past state_max_bytes (resource_limit, E-RUN-058), or a
// store that cannot be used. A cancel of the caller's ctx stays a cancel.
func (d *Driver) stateEnding(ctx context.Context, err error) error {
	name := d.info.Name
	var busy *grant.StateBusyError
	var sl *grant.StateLimitError
	switch {
	case errors.As(err, &busy):
		return &driver.Error{Kind: driver.KindCanceled, Driver: name,
			Message: "the component's run ended " + trace.EndDeadlineExceeded, Err: cause{err.Error(), []error{err, context.DeadlineExceeded}}}
	case errors.As(err, &sl):
		return &driver.Error{Kind: driver.KindProvider, Driver: name, Message: "the component's run ended " + trace.EndResourceLimit, Err: err}
	case ctx.Err() != nil:
		return d.ending(ctx, err)
	}
	return &driver.Error{Kind: driver.KindProvider, Driver: name, Message: "the component cannot be run", Err: err}
}

// goIO is how a turn's instance runs: with Go's wasi:io, so the
// provider's stream reaches the component as it arrives. A variable so a
// benchmark can set it against the capsules' spool path.
var goIO = true

// host grants the driver world's imports besides WASI: murmur:text/chunks,
// and wasi:http under the configured policy.
func (d *Driver) host(chunk driver.ChunkFunc) *wasmhost.Host {
	h := wasmhost.NewHost()
	wit.GrantTextChunks(h, func(ctx context.Context, text string, thinking bool) error {
		if thinking {
			d.log.Debug("driver thinking chunk", "bytes", len(text))
			return nil
		}
		if chunk != nil {
			chunk(text)
		}
		return nil
	})
	wit.GrantHTTP(h, d.http, d.log)
	return h
}

func (d *Driver) response(res wit.ToolResult) (*driver.Response, error) {
	if res.Status != wit.StatusPassed {
		msg := fmt.Sprintf("the component answered status %s", res.Status)
		if res.Summary != nil && *res.Summary != "" {
			msg += ": " + *res.Summary
		}
		return nil, &driver.Error{Kind: driver.KindProvider, Driver: d.info.Name, Message: msg}
	}
	if res.Data == nil {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name,
			Message: "the component's result holds no data (the response JSON belongs in tool-result.data)"}
	}
	var resp driver.Response
	if err := json.Unmarshal([]byte(*res.Data), &resp); err != nil {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name,
			Message: "the component's tool-result.data is not a response JSON object", Err: err}
	}
	if err := resp.Validate(); err != nil {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "the component's response cannot be used", Err: err}
	}
	for _, kv := range res.Metadata {
		if kv[0] == MetadataContinuationID {
			resp.ContinuationID = kv[1]
		}
	}
	return &resp, nil
}

// ending words a call that did not return normally as a *driver.Error whose
// message names the ending; a deadline passed while waiting on the runtime
// also leaves a call_deadline line.
func (d *Driver) ending(ctx context.Context, err error) error {
	e := grant.EndingOf(err)
	name := d.info.Name
	var diagErr *diag.Diagnostic
	switch {
	case e.Cancelled || ctx.Err() != nil:
		de := driver.Canceled(name, ctx)
		de.Err = cause{err.Error(), []error{err, ctx.Err()}}
		return de
	case e.Status == trace.EndDeadlineExceeded:
		if e.WaitedOnRuntime && d.rec != nil {
			d.rec.CallDeadline(name, RunCall, d.limits.Deadline)
		}
		return &driver.Error{Kind: driver.KindCanceled, Driver: name,
			Message: fmt.Sprintf("the component's run ended %s (deadline %s)", e.Status, d.limits.Deadline),
			Err:     cause{err.Error(), []error{err, context.DeadlineExceeded}}}
	case e.Status == trace.EndTrapped:
		// The trap's own text starts "trapped:"; the message already says so.
		return &driver.Error{Kind: driver.KindProvider, Driver: name, Message: "the component's run ended " + e.Status,
			Err: cause{e.Reason, []error{err}}}
	case e.Status == trace.EndResourceLimit:
		return &driver.Error{Kind: driver.KindProvider, Driver: name, Message: "the component's run ended " + e.Status, Err: err}
	case e.Exited || e.Status == trace.EndOK:
		// An exit, even with status 0, returns no result.
		return &driver.Error{Kind: driver.KindProvider, Driver: name,
			Message: fmt.Sprintf("the component exited with status %d without returning a result", e.ExitCode), Err: err}
	case errors.As(err, &diagErr):
		// Not an ending of the guest: the run could not be set up.
		return &driver.Error{Kind: driver.KindProvider, Driver: name, Message: "the component cannot be run", Err: err}
	}
	return &driver.Error{Kind: driver.KindProvider, Driver: name, Message: "the component's run ended " + e.Status, Err: err}
}

// cause is an engine ending under the text a driver error shows for it,
// matching more than one error: a deadline reads as context.DeadlineExceeded
// to errors.Is and as the engine's *wasmhost.DeadlineError to errors.As.
type cause struct {
	text string
	errs []error
}

func (c cause) Error() string   { return c.text }
func (c cause) Unwrap() []error { return c.errs }

// Ending is the ending of a failed Call's error in the spec's words
// (trace.EndTrapped, EndDeadlineExceeded, EndResourceLimit, EndFailed), and
// whether it is a deadline passed while the component waited on the runtime
// (the call_deadline line, naming RunCall). For an error that is not a
// component's ending (a malformed response, a non-passed status) it is
// trace.EndFailed.
func Ending(err error) (status string, waitedOnRuntime bool) {
	e := grant.EndingOf(err)
	return e.Status, e.WaitedOnRuntime
}
