// Package manifest reads murmur.yaml (docs/manifest.md) into typed values.
//
// The model keeps whether each key was declared: the specification treats
// "declared nothing" differently from a default (a parent with no
// filesystem.scope covers any child scope; a declared deadline_seconds replaces
// both built-in deadlines), so defaults are applied only when a value is read,
// through Opt.Or and the accessor methods, never while parsing.
package manifest

import "encoding/json"

// Opt is a scalar that may or may not have been declared in the manifest.
type Opt[T any] struct {
	V   T
	Set bool // declared in the file
}

// Some returns a declared Opt.
func Some[T any](v T) Opt[T] { return Opt[T]{V: v, Set: true} }

// Or returns the declared value, or def when the key was not declared.
func (o Opt[T]) Or(def T) T {
	if o.Set {
		return o.V
	}
	return def
}

// Pos is a place in a manifest file, 1-based.
type Pos struct {
	Line, Column int
}

// Kind of artifact a manifest describes (top-level `runtime`).
const (
	RuntimeCapsule = "capsule"
	RuntimeTool    = "tool"
	RuntimeDriver  = "driver"
	RuntimeHook    = "hook"
	RuntimeSkill   = "skill"
)

// The published implementation's own spellings (docs/manifest.md): top-level
// `runtime: wasm` is a WASM tool and `runtime: native` a native tool; both
// read as RuntimeTool with the implementation they name.
const (
	RuntimeWASM   = "wasm"
	RuntimeNative = "native"
)

// How an artifact is implemented (`implementation`, a tool's, [wasm]) and
// packaged (`execution`, derived when undeclared: static for a skill and an
// agent capsule, native for a native tool, wasm otherwise).
const (
	ImplementationWASM   = "wasm"
	ImplementationNative = "native"
	ExecutionWASM        = "wasm"
	ExecutionNative      = "native"
	ExecutionStatic      = "static"
)

// Containment floors, lowest first (undeclared ranks as advisory;
// docs/containment.md).
const (
	ContainmentAdvisory = "advisory"
	ContainmentScoped   = "scoped"
	ContainmentSealed   = "sealed"
)

// Built-in defaults: what a manifest that declares no limit gets
// (docs/manifest.md, docs/running-capsules.md "Endings").
const (
	DefaultMemoryBytes        int64 = 512 << 20
	DefaultTableElements      int64 = 100_000
	DefaultInstances          int64 = 1_000
	DefaultDeadlineSeconds          = 600 // capsule, tool and driver calls
	DefaultHookDeadlineSecond       = 30  // hook lifecycle calls
	DefaultWorkdirMaxBytes    int64 = 10 << 30
	DefaultStateMaxBytes      int64 = 1 << 30
	// capabilities.resources.* for native commands.
	DefaultMaxProcesses       int64 = 128
	DefaultMaxOpenFiles       int64 = 1024
	DefaultMaxFileSizeBytes   int64 = 4 << 30
	DefaultCPUSeconds         int64 = 3600
	DefaultCommandMemory      int64 = 2 << 30
	DefaultCgroupMemoryBytes  int64 = 4 << 30
	DefaultCgroupPidsMax      int64 = 256
	DefaultMaxTurns                 = 10
	DefaultMaxTokens                = 8192
	DefaultQueueDepth               = 1
	DefaultDelegationDeadline       = 600
	// DefaultMemories and DefaultTables cap how many linear memories and
	// tables one run may create, so the total stays bounded.
	DefaultMemories int64 = 100
	DefaultTables   int64 = 1_000
	// GraceSeconds: a call waiting on the runtime is stopped at its
	// deadline plus this grace, so a call cut at its deadline still ends.
	GraceSeconds = 2
)

// Manifest is one parsed murmur.yaml.
type Manifest struct {
	// File is the path it was read from ("" when parsed from bytes with no name).
	File string

	// Name is the full name <scope>/<name>; a bare name is normalised to local/<name>.
	Name string
	// DeclaredName is the name exactly as written.
	DeclaredName string
	Version      string
	Runtime      Opt[string] // capsule|tool|driver|hook|skill [capsule]
	// DeclaredRuntime is `runtime` exactly as written: "wasm" and "native"
	// (the published spellings) read as Runtime "tool".
	DeclaredRuntime string
	// Implementation is `implementation` (wasm|native); Execution is
	// `execution` (wasm|native|static). Read them through IsNative and
	// ExecutionKind, which take every spelling into account.
	Implementation Opt[string]
	Execution      Opt[string]
	Description    string
	Tags           []string
	// InputSchema is a tool's input_schema as JSON (nil: none declared;
	// the model is then offered {"type":"object"}).
	InputSchema json.RawMessage
	// RequiresFiles are extra relative paths packed by mur build.
	RequiresFiles []string

	Artifacts    []Artifact
	Capabilities Capabilities

	// Inference is nil for a script capsule (or a non-capsule artifact).
	Inference *Inference
	Lifecycle Lifecycle
	// Tools is the top-level tools: map, in the order written.
	Tools         []ToolSetting
	Door          Door
	Observability Observability
	Trace         TraceConfig
	Exports       Exports

	// Warnings found while loading (unknown keys, W-SEC-007 narrowing, ...).
	Warnings []Warning

	// native records the key that makes this a native tool (nil: not one).
	native *nativeMark

	// declared maps every declared key's dotted path ("capabilities.filesystem.scope",
	// "artifacts[0].gateway.api_key") to where it was written.
	declared map[string]Pos
}

// Warning is a coded warning tied to a place in the file (Pos zero when none).
type Warning struct {
	Code    string // W-...
	Message string
	Pos     Pos
}

// Declared reports whether the dotted key path was written in the file.
func (m *Manifest) Declared(path string) bool {
	_, ok := m.declared[path]
	return ok
}

// PosOf returns where the dotted key path was written (zero Pos if not declared).
func (m *Manifest) PosOf(path string) Pos { return m.declared[path] }

// IsAgent reports whether the manifest has an inference: block.
func (m *Manifest) IsAgent() bool { return m.Inference != nil }

// Bare returns the name part of a full name ("worker-a" for "local/worker-a").
func Bare(full string) string {
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '/' {
			return full[i+1:]
		}
	}
	return full
}

// Artifact is one artifacts[] entry.
type Artifact struct {
	Name string // full name; a bare name is normalised to local/<name>
	// DeclaredName is the name exactly as written.
	DeclaredName string
	Version      string
	Runtime      Opt[string] // tool|driver|hook|skill [tool]
	// DeclaredRuntime is `runtime` as written ("wasm" and "native" read as
	// Runtime "tool").
	DeclaredRuntime string
	Gateway         *Gateway
	// Capabilities is the artifact's own grant as written (nil = not declared:
	// the artifact inherits the capsule's grant). EffectiveGrants narrows it.
	Capabilities *Capabilities
	// State is the artifact's durable state store; nil = none declared.
	State *State
	// Config is handed to this artifact only.
	Config map[string]any
	// DeadlineSeconds is a hook's own deadline.
	DeadlineSeconds Opt[int]
	// MCP is an mcp entry's mcp: block (nil when not declared).
	MCP *MCP
	Pos Pos
	// native records `runtime: native` on this entry (nil: not declared).
	native *nativeMark
}

// Gateway is an artifact's upstream endpoint and key.
type Gateway struct {
	Endpoint string
	// APIKey is the resolved key; APIKeyRef the text as written ("${NAME}").
	// A literal key (no ${...}) is kept in APIKey with APIKeyRef empty, even
	// with Options.SkipSecrets (nothing is resolved for it); see LiteralKey.
	// With SkipSecrets a reference is left unresolved: APIKey stays "".
	APIKey    string
	APIKeyRef string
}

// State is `capabilities.state` of one artifact. Store "" means `state: {}`,
// a store named after the capsule's bare name.
type State struct {
	Store Opt[string]
}

// Capabilities is a grant set, at capsule level or per artifact.
type Capabilities struct {
	Network     Network
	PeerFetch   AllowList
	Shell       AllowList
	Spawn       Spawn
	Env         AllowList
	Filesystem  Filesystem
	Install     Install
	Containment Opt[string] // advisory|scoped|sealed
	Limits      Limits
	Resources   Resources
	Plan        PlanGrant
}

// PlanGrant is capabilities.plan: submit gives an agent capsule the
// runtime tool submit-plan (docs/plans.md).
type PlanGrant struct {
	Submit Opt[bool]
}

// AllowList is a list-valued grant.
type AllowList struct {
	Allow []string
}

// Network is capabilities.network.
type Network struct {
	Allow       []string // https://host[:port], http://host[:port], host, host:port
	UnixSockets Opt[bool]
}

// Spawn is capabilities.spawn.
type Spawn struct {
	Allow           []string // full names
	WorkdirSnapshot []string // full names, each also in Allow
}

// Filesystem is capabilities.filesystem.
type Filesystem struct {
	Scope       Opt[string] // cleaned relative path; unset = the whole work folder
	WorkdirExec Opt[bool]
}

// Install is capabilities.install.
type Install struct {
	Skill []string
	Tool  []string
}

// Limits is capabilities.limits.
type Limits struct {
	DeadlineSeconds Opt[int]
	MemoryBytes     Opt[int64]
	TableElements   Opt[int64]
	Instances       Opt[int64]
}

// Resources is capabilities.resources: the work folder's size, and what
// every native command the capsule starts is held to (rlimits, and cgroup
// caps where a cgroup plane holds).
type Resources struct {
	WorkdirMaxBytes   Opt[int64]
	MaxProcesses      Opt[int64]
	MaxOpenFiles      Opt[int64]
	MaxFileSizeBytes  Opt[int64]
	CPUSeconds        Opt[int64]
	MemoryBytes       Opt[int64]
	CgroupMemoryBytes Opt[int64]
	CgroupPidsMax     Opt[int64]
	// StateMaxBytes bounds each state store the capsule's artifacts open
	// (the capsule's own value; an artifact's is not read).
	StateMaxBytes Opt[int64]
}

// Inference is the inference: block of an agent capsule.
type Inference struct {
	Transport Opt[string] // http|process [http]
	Model     string
	// DriverArtifact is the full name of the `runtime: driver` artifact
	// driver.artifact names (written as a full or a bare name; Parse checks it
	// is declared and stores the declared artifact's full name).
	DriverArtifact   string
	Command          string
	MaxTurns         Opt[int]
	MaxTokens        Opt[int]
	MaxSessionTokens Opt[int]
	SystemPrompt     string
	SystemPromptFile string
}

// Lifecycle is the lifecycle: block.
type Lifecycle struct {
	TaskAcceptance         Opt[string] // none|single|queue [single]
	AfterTask              Opt[string] // exit|sleep [exit]
	QueueDepth             Opt[int]
	DelegationDeadlineSecs Opt[int]
	// InputTimeoutSecs bounds an operator's approval and a request-input
	// wait (none: as long as the task lives).
	InputTimeoutSecs Opt[int]
}

// ToolSetting is one entry of the top-level tools: map.
type ToolSetting struct {
	// Key is the tool's name as written (full, bare, a shell binary,
	// delegate-task or submit-plan).
	Key string
	// Tool is the name the key resolves to: the artifact's full name, the
	// shell binary, delegate-task or submit-plan.
	Tool string
	// Approval is required|none [none].
	Approval Opt[string]
}

// ApprovalRequired is the value of tools.<name>.approval that makes each
// call of the tool wait for an operator.
const ApprovalRequired = "required"

// Door is what an agent capsule's door asks of its callers: the top-level
// network.authentication and exports.peer_tasks blocks (docs/formations.md).
type Door struct {
	// AuthScheme is network.authentication.scheme ("bearer", the only
	// value); "" when network.authentication is not declared.
	AuthScheme string
	// PeerTasksAccept is exports.peer_tasks.accept [false]: whether the door
	// takes tasks from formation members (origin peer).
	PeerTasksAccept Opt[bool]
}

// Authenticated reports whether the door requires a bearer token.
func (d Door) Authenticated() bool { return d.AuthScheme != "" }

// AcceptsPeerTasks reports exports.peer_tasks.accept.
func (d Door) AcceptsPeerTasks() bool { return d.PeerTasksAccept.Or(false) }

// Observability is the observability: block.
type Observability struct {
	OtelEndpoint string
}

// TraceConfig is the trace: block.
type TraceConfig struct {
	Retain Retain
}

// Retain is trace.retain.
type Retain struct {
	MaxSessions Opt[int]
	MaxAge      Opt[string] // a Go duration, or Nd for days
}
