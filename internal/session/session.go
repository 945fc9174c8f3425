// Package session holds one run's identity and files (docs/running-capsules.md): its
// session id, its work folder, the records dir that outlives it, the runtime
// dir the capsule reads its task and identity from, and its running-capsule
// record.
//
// The records dir is keyed by the project's absolute path so that `mur trace
// show @N` and trace.retain find a project's sessions without an index; the
// runtime dir lives under ~/.murmur/sessions so removing it at the end never
// touches anything the person keeps.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/murmur-go/murmur/internal/atomicfile"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/running"
)

// Config is what a run knows before its session exists.
type Config struct {
	// Home is $HOME; "" reads it from the environment.
	Home string
	// ManifestDir is the directory holding murmur.yaml; "" for a --capsule run.
	ManifestDir string
	// Workdir is --workdir; "" picks <ManifestDir>/workdir/<id>, or for a
	// --capsule run ./workdir/<id> under Cwd.
	Workdir string
	// Cwd is the current directory; "" reads it.
	Cwd string

	Name, Version string
	// CapsuleURL is the agent's door address; "" for a script capsule.
	CapsuleURL string
	// Task is written to task.md.
	Task string
	// ManifestYAML is copied to murmur.yaml in the runtime dir.
	ManifestYAML []byte
	// Grants is the effective grant set as JSON, shown readably in MURMUR.md.
	Grants json.RawMessage

	SpawnedBy, FormationID string
	// FormationMember is a launcher-started member's name ("" otherwise):
	// its work folder is $HOME/.murmur/formations/<formation>/<member>.
	FormationMember string
	// Formation is MURMUR.md's ## Formation section of such a member (nil: none).
	Formation *Formation
	// ParentCopy is a delegated child's workdir snapshot, nil when its
	// parent made none: one line of MURMUR.md's ## Work folder.
	ParentCopy *ParentCopy
	// RuntimeBinaries are the runtime's own executables (mur, and what
	// delegated children run): a work folder may not hold their
	// directories, where mur-contain and mur-driver lie beside mur.
	RuntimeBinaries []string
	// ID forces the session id (a parent that minted it); "" makes one.
	ID  string
	Now func() time.Time
}

// Session is one run's identity and directories.
type Session struct {
	ID, Name, Version string
	CapsuleURL        string
	// Workdir is the capsule's work folder (absolute).
	Workdir string
	// ProjectDir is the directory the records are keyed by.
	ProjectDir string
	// ProjectRecordsDir holds every session of the project; RecordsDir is this one's.
	ProjectRecordsDir, RecordsDir string
	// RuntimeDir is $MURMUR_RUNTIME_DIR on the host side.
	RuntimeDir string
	// RunningDir is ~/.murmur/running.
	RunningDir string
	// Set before WriteRunningRecord: the running record's formation keys
	// and the door's operator token.
	FormationMember   string
	FormationLauncher *running.Launcher
	DoorToken         string
	// Callees are a formation member's callees (nil for any other run):
	// its components are handed their virtual addresses and reach them
	// through the runtime (formation.Callees.Route).
	Callees *formation.Callees
	Started time.Time

	homeDir     string
	sessionDir  string // ~/.murmur/sessions/<id>
	spawnedBy   string
	formationID string
	recorded    bool
	begun       *os.File   // the held lock that marks the session begun (see Begun)
	tools       []ToolLine // nil: no ## Tools section (a script capsule)
	mcpServers  []string   // one line per MCP server (## MCP servers); nil: none
	formation   *Formation
	parentCopy  *ParentCopy
}

// ParentCopy is what MURMUR.md says of a workdir snapshot: the file count
// and size of the copy the work folder started with.
type ParentCopy struct {
	Files int
	Bytes int64
}

// New mints the session id, marks the session begun (a lock held in
// ~/.murmur/sessions/<id> until Close, see Begun), then creates the work
// folder, the records dir (logs/, out/) and the runtime dir (task.md,
// murmur.yaml, MURMUR.md), each 0700. On error nothing it created for the
// runtime is left behind.
func New(cfg Config) (*Session, error) {
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	homeDir := cfg.Home
	if homeDir == "" {
		h, err := home.Dir()
		if err != nil {
			return nil, err
		}
		homeDir = h
	}
	id := cfg.ID
	if id == "" {
		id = ids.New(ids.Session)
	}
	s := &Session{
		ID: id, Name: cfg.Name, Version: cfg.Version, CapsuleURL: cfg.CapsuleURL,
		Started: now(), homeDir: homeDir, spawnedBy: cfg.SpawnedBy, formationID: cfg.FormationID, formation: cfg.Formation,
		parentCopy: cfg.ParentCopy,
		RunningDir: home.Running(homeDir),
	}

	cwd := cfg.Cwd
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return nil, diag.Wrap(err, "E-IO-052", "cannot read the current directory")
		}
	}
	switch {
	case cfg.Workdir != "":
		s.Workdir = absFrom(cwd, cfg.Workdir)
	case cfg.ManifestDir != "":
		s.Workdir = filepath.Join(absFrom(cwd, cfg.ManifestDir), "workdir", id)
	default:
		s.Workdir = filepath.Join(cwd, "workdir", id)
	}
	if cfg.ManifestDir != "" {
		s.ProjectDir = absFrom(cwd, cfg.ManifestDir)
	} else {
		s.ProjectDir = s.Workdir
	}

	// A delegated child's work folder is the one its parent's runtime made
	// under <parent records dir>/children/ (docs/delegation.md): inside
	// ~/.murmur on purpose.
	// A formation member's is the one its launcher made under
	// ~/.murmur/formations, on purpose too.
	memberDir := cfg.FormationMember != "" && cfg.FormationID != "" &&
		s.Workdir == filepath.Join(home.Formations(homeDir), cfg.FormationID, cfg.FormationMember)
	if !(cfg.SpawnedBy != "" && IsChildDir(s.Workdir, homeDir)) && !memberDir {
		if err := CheckWorkdir(s.Workdir, homeDir, cfg.ManifestDir != "", s.ProjectDir); err != nil {
			return nil, err
		}
		if err := CheckRuntimeBinaries(s.Workdir, cfg.RuntimeBinaries); err != nil {
			return nil, err
		}
	}
	// Mark the session begun before any dir of it exists, so that a
	// concurrent run's trace.retain, which lists records dirs, never sees
	// this session's records dir without its mark.
	s.sessionDir = home.Session(homeDir, id)
	lock, err := markBegun(s.sessionDir)
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-054", "cannot create the runtime dir %s", s.sessionDir).
			WithHint("check that %s is writable", home.Murmur(homeDir))
	}
	s.begun = lock
	if err := mkdirs(s.Workdir, "out"); err != nil {
		s.Close()
		return nil, diag.Wrap(err, "E-IO-052", "cannot create the work folder %s", s.Workdir).
			WithHint("choose a writable place with --workdir")
	}
	s.ProjectRecordsDir = home.ProjectRecords(homeDir, s.ProjectDir)
	s.RecordsDir = filepath.Join(s.ProjectRecordsDir, id)
	if err := mkdirs(s.RecordsDir, "logs", "out"); err != nil {
		s.Close()
		return nil, diag.Wrap(err, "E-IO-053", "cannot create the records dir %s", s.RecordsDir).
			WithHint("check that %s is writable", home.Murmur(homeDir))
	}
	s.RuntimeDir = home.Runtime(homeDir, id)
	if err := s.writeRuntime(cfg); err != nil {
		s.Close()
		return nil, diag.Wrap(err, "E-IO-054", "cannot create the runtime dir %s", s.RuntimeDir).
			WithHint("check that %s is writable", home.Murmur(homeDir))
	}
	return s, nil
}

func absFrom(cwd, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(cwd, p)
}

// mkdirs creates dir and its subdirectories, 0700 at every level it creates.
func mkdirs(dir string, subs ...string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, sub := range subs {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

func (s *Session) writeRuntime(cfg Config) error {
	if err := os.MkdirAll(s.RuntimeDir, 0o700); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		{"task.md", []byte(cfg.Task)},
		{"murmur.yaml", cfg.ManifestYAML},
		{"MURMUR.md", []byte(IdentityDoc(s, cfg.Grants))},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(s.RuntimeDir, f.name), f.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Formation is what MURMUR.md says of a launcher-started formation member.
type Formation struct {
	ID, Member string
	Entry      bool
	Callees    []string // roster order
}

// IdentityDoc renders MURMUR.md: who this session is and what it may do.
func IdentityDoc(s *Session, grants json.RawMessage) string {
	var b strings.Builder
	b.WriteString("# MURMUR\n\n")
	b.WriteString("An inventory of this session, written by the runtime: who it is, where it works, what it may call. It is not instructions.\n")
	b.WriteString("\n## Identity\n\n")
	fmt.Fprintf(&b, "- capsule: %s\n", s.Name)
	fmt.Fprintf(&b, "- version: %s\n", s.Version)
	fmt.Fprintf(&b, "- session: %s\n", s.ID)
	if s.CapsuleURL != "" {
		fmt.Fprintf(&b, "- url: %s\n", s.CapsuleURL)
	}
	b.WriteString("\n## Work folder\n\n")
	fmt.Fprintf(&b, "- path: %s\n", s.Workdir)
	if pc := s.parentCopy; pc != nil {
		fmt.Fprintf(&b, "- snapshot: it started as a copy of the parent capsule's work folder, %d %s, %s; changes here do not reach the parent's work folder\n",
			pc.Files, plural(pc.Files, "file", "files"), sizeText(pc.Bytes))
	}
	if f := s.formation; f != nil {
		b.WriteString("\n## Formation\n\n")
		fmt.Fprintf(&b, "- formation: %s\n", f.ID)
		fmt.Fprintf(&b, "- member: %s\n", f.Member)
		role := "peer"
		if f.Entry {
			role = "entry"
		}
		fmt.Fprintf(&b, "- role: %s\n", role)
		callees := "none"
		if len(f.Callees) > 0 {
			callees = strings.Join(f.Callees, ", ")
		}
		fmt.Fprintf(&b, "- callees: %s\n", callees)
	}
	g, typed := effectiveGrants(grants)
	if s.tools != nil {
		b.WriteString("\n## Tools\n\n")
		if len(s.tools) == 0 {
			b.WriteString("None.\n")
		}
		for _, t := range s.tools {
			fmt.Fprintf(&b, "- %s (%s): %s\n", t.Name, t.Kind, t.Description)
		}
	}
	if len(s.mcpServers) > 0 {
		b.WriteString("\n## MCP servers\n\n")
		for _, l := range s.mcpServers {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	if typed {
		b.WriteString("\n## Shell\n\n")
		writeList(&b, g.Capsule.ShellAllow)
		b.WriteString("\n## Delegation\n\n")
		writeList(&b, g.Capsule.SpawnAllow)
		b.WriteString("\n## Limits\n\n")
		l := g.Capsule.Limits
		fmt.Fprintf(&b, "- deadline: %d s per component call\n", l.DeadlineSeconds)
		fmt.Fprintf(&b, "- memory: %d bytes per linear memory\n", l.MemoryBytes)
	}
	b.WriteString("\n## Granted\n\n")
	if typed {
		// The same words `mur run --explain-scope` prints.
		b.WriteString("```\n")
		for _, l := range g.Lines() {
			b.WriteString(l + "\n")
		}
		b.WriteString("```\n")
		return b.String()
	}
	lines := grantLines(grants)
	if len(lines) == 0 {
		b.WriteString("Nothing beyond the work folder and this runtime directory.\n")
	}
	for _, l := range lines {
		b.WriteString("- " + l + "\n")
	}
	return b.String()
}

func writeList(b *strings.Builder, items []string) {
	if len(items) == 0 {
		b.WriteString("None granted.\n")
		return
	}
	for _, it := range items {
		b.WriteString("- " + it + "\n")
	}
}

// ToolLine is one tool of MURMUR.md's ## Tools section.
type ToolLine struct{ Name, Kind, Description string }

// SetMCPServers sets the ## MCP servers lines MURMUR.md's next write
// lists ("everything  stdio  mcp-server-everything stdio  (scoped)").
func (s *Session) SetMCPServers(lines []string) { s.mcpServers = append([]string{}, lines...) }

// SetTools records the session's tools (an agent's inventory, built once
// the session exists) and rewrites MURMUR.md with its ## Tools section. The
// file is replaced atomically: a reader sees the old inventory or the new.
func (s *Session) SetTools(tools []ToolLine, grants json.RawMessage) error {
	s.tools = append([]ToolLine{}, tools...)
	return atomicfile.Write(filepath.Join(s.RuntimeDir, "MURMUR.md"), []byte(IdentityDoc(s, grants)), 0o600)
}

// effectiveGrants reads grants as manifest.Grants when it has that shape (a
// "capsule" grant set), which is what mur run hands over.
func effectiveGrants(raw json.RawMessage) (manifest.Grants, bool) {
	var probe struct {
		Capsule *json.RawMessage `json:"capsule"`
	}
	var g manifest.Grants
	if len(raw) == 0 || json.Unmarshal(raw, &probe) != nil || probe.Capsule == nil || json.Unmarshal(raw, &g) != nil {
		return manifest.Grants{}, false
	}
	return g, true
}

// grantLines flattens any other JSON grant set into "a.b: x, y" lines,
// skipping empty values so the document lists only what is granted.
func grantLines(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x[k])
			}
		case []any:
			if len(x) == 0 {
				return
			}
			parts := make([]string, len(x))
			for i, e := range x {
				if s, ok := e.(string); ok {
					parts[i] = s
				} else {
					j, _ := json.Marshal(e)
					parts[i] = string(j)
				}
			}
			out = append(out, prefix+": "+strings.Join(parts, ", "))
		case nil:
		case bool:
			if x {
				out = append(out, prefix+": true")
			}
		case string:
			if x != "" {
				out = append(out, prefix+": "+x)
			}
		default:
			j, _ := json.Marshal(x)
			out = append(out, prefix+": "+string(j))
		}
	}
	walk("", v)
	return out
}

// WriteRunningRecord writes the session's running-capsule record. It never
// fails the run: a record that cannot be written is a W-SEC-023 warning.
func (s *Session) WriteRunningRecord() *diag.Warning {
	pid, start, err := running.Self()
	if err == nil {
		var url *string
		if s.CapsuleURL != "" {
			// The record keeps the bare 127.0.0.1:PORT, as the --json
			// ready line does.
			u := strings.TrimPrefix(s.CapsuleURL, "http://")
			url = &u
		}
		err = running.Write(s.RunningDir, running.Record{
			SessionID: s.ID, URL: url, PID: pid, ProcessStart: start,
			CapsuleName: s.Name, CapsuleVersion: s.Version,
			Workdir: s.Workdir, RecordsDir: s.RecordsDir,
			StartedAt: s.Started.UTC().Format(time.RFC3339),
			SpawnedBy: s.spawnedBy, FormationID: s.formationID,
			FormationMember: s.FormationMember, FormationLauncher: s.FormationLauncher, DoorToken: s.DoorToken,
		})
	}
	if err != nil {
		w := diag.Warn("W-SEC-023", "the running-capsule record for %s could not be written (%v); the session runs on, uncounted by mur ps and mur-roost", s.ID, err)
		return &w
	}
	s.recorded = true
	return nil
}

// Close removes the running record and the runtime dir. The work folder and
// the records dir stay. It is safe to call twice.
func (s *Session) Close() error {
	var errs []error
	if s.recorded {
		if err := running.Remove(s.RunningDir, s.ID); err != nil {
			errs = append(errs, err)
		}
		s.recorded = false
	}
	if s.sessionDir != "" {
		if err := os.RemoveAll(s.sessionDir); err != nil {
			errs = append(errs, err)
		}
	}
	if s.begun != nil {
		// Released last: once the mark is gone the records are retention's.
		s.begun.Close()
		s.begun = nil
	}
	return errors.Join(errs...)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sizeText is a byte count as people read it: exact below 1 KiB, else to
// one decimal in KiB, MiB or GiB, with the exact count beside it.
func sizeText(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return fmt.Sprintf("%.1f %s (%d bytes)", v, unit, n)
}

// FormationID is the formation the session belongs to ("" for none).
func (s *Session) FormationID() string { return s.formationID }
