package manifest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

var (
	fuzzCode   = regexp.MustCompile(`^E-(MAN|CAP)-0\d\d$`)
	fuzzPrefix = regexp.MustCompile(`^murmur\.yaml:[1-9]\d*:[1-9]\d*: `)
)

const fuzzSecret = "s3cr3t-Value-9f1c"

// FuzzParse checks that Parse never panics, that every failure is a coded,
// positioned, one-line diagnostic, that a resolved secret never reaches a
// message or the effective grants, and that narrowing never gives an artifact
// more than its capsule holds.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"agent-capsule.yaml", "script-capsule.yaml", "tool-artifact.yaml", "typical.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, dir := range []string{"jsonl-line-count", "line-counter", "git-status"} {
		b, err := os.ReadFile(filepath.Join("testdata", "published", dir, "murmur.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "", Options{LookupEnv: func(string) (string, bool) { return fuzzSecret, true }})
		leakCheck := !strings.Contains(string(data), fuzzSecret)
		if err != nil {
			if m != nil {
				t.Fatal("manifest returned with an error")
			}
			var d *diag.Diagnostic
			if !errors.As(err, &d) {
				t.Fatalf("not a diagnostic: %T %v", err, err)
			}
			if !fuzzCode.MatchString(d.Code) || !fuzzPrefix.MatchString(d.Message) || strings.ContainsAny(d.Message, "\n\r\x1b") {
				t.Fatalf("badly formed diagnostic: %s %q", d.Code, d.Message)
			}
			if leakCheck && (strings.Contains(d.Message, fuzzSecret) || strings.Contains(d.Hint, fuzzSecret)) {
				t.Fatalf("secret in the error: %v", d)
			}
			return
		}
		if !IsFullName(m.Name) || m.Version == "" || ReservedVersion(m.Version) {
			t.Fatalf("accepted name %q version %q", m.Name, m.Version)
		}
		checkImplementation(t, m)
		g, ws := m.EffectiveGrants()
		js, jerr := json.Marshal(g)
		if jerr != nil {
			t.Fatal(jerr)
		}
		if leakCheck && strings.Contains(string(js), fuzzSecret) {
			t.Fatalf("secret in the grants: %s", js)
		}
		for _, w := range append(ws, m.Warnings...) {
			if !strings.HasPrefix(w.Code, "W-") || !fuzzPrefix.MatchString(w.Message) || strings.ContainsAny(w.Message, "\n\r\x1b") ||
				(leakCheck && strings.Contains(w.Message, fuzzSecret)) {
				t.Fatalf("bad warning %+v", w)
			}
		}
		for _, a := range g.Artifacts {
			checkNarrowed(t, g.Capsule, a)
		}
	})
}

// checkNarrowed asserts the envelope property: an artifact's effective grant
// never exceeds its capsule's on any axis.
func checkNarrowed(t *testing.T, c GrantSet, a ArtifactGrant) {
	t.Helper()
	g := a.Grants
	for _, e := range g.NetworkAllow {
		if !NetListCovers(c.NetworkAllow, e) {
			t.Fatalf("%s: network %q beyond the capsule's %v", a.Name, e, c.NetworkAllow)
		}
	}
	for _, e := range g.PeerFetchAllow {
		if !NetListCovers(c.PeerFetchAllow, e) {
			t.Fatalf("%s: peer_fetch %q beyond the capsule's", a.Name, e)
		}
	}
	sub := func(what string, child, parent []string) {
		for _, e := range child {
			if !slices.Contains(parent, e) {
				t.Fatalf("%s: %s %q beyond the capsule's %v", a.Name, what, e, parent)
			}
		}
	}
	sub("shell", g.ShellAllow, c.ShellAllow)
	sub("spawn", g.SpawnAllow, c.SpawnAllow)
	sub("snapshot", g.WorkdirSnapshot, c.WorkdirSnapshot)
	sub("env", g.EnvAllow, c.EnvAllow)
	inst := func(child, parent []string) {
		for _, e := range child {
			if !slices.ContainsFunc(parent, func(p string) bool { return InstallCovers(p, e) }) {
				t.Fatalf("%s: install %q beyond the capsule's %v", a.Name, e, parent)
			}
		}
	}
	inst(g.InstallSkill, c.InstallSkill)
	inst(g.InstallTool, c.InstallTool)
	if !ScopeCovers(c.FilesystemScope, g.FilesystemScope) {
		t.Fatalf("%s: scope beyond the capsule's", a.Name)
	}
	if (g.UnixSockets && !c.UnixSockets) || (g.WorkdirExec && !c.WorkdirExec) {
		t.Fatalf("%s: a flag beyond the capsule's", a.Name)
	}
	if ContainmentRank(g.Containment) < ContainmentRank(c.Containment) {
		t.Fatalf("%s: containment lowered", a.Name)
	}
	l, cl := g.Limits, c.Limits
	if l.DeadlineSeconds > cl.DeadlineSeconds || l.MemoryBytes > cl.MemoryBytes || l.TableElements > cl.TableElements ||
		l.Instances > cl.Instances || l.WorkdirMaxBytes > cl.WorkdirMaxBytes {
		t.Fatalf("%s: limits beyond the capsule's: %+v > %+v", a.Name, l, cl)
	}
}

// checkImplementation asserts what a loaded manifest's implementation keys
// promise: only a tool is native, a native tool's refusal is a positioned
// E-MAN-029, the packaging is one of the three, and every artifact has a
// full name however it was written.
func checkImplementation(t *testing.T, m *Manifest) {
	t.Helper()
	if m.IsNative() && m.RuntimeKind() != RuntimeTool {
		t.Fatalf("a native %s", m.RuntimeKind())
	}
	if k := m.ExecutionKind(); k != ExecutionWASM && k != ExecutionNative && k != ExecutionStatic {
		t.Fatalf("execution %q", k)
	}
	refusals := []error{m.RefuseNative()}
	for _, a := range m.Artifacts {
		if !IsFullName(a.Name) {
			t.Fatalf("artifact name %q", a.Name)
		}
		if a.IsNative() && a.RuntimeKind() != RuntimeTool {
			t.Fatalf("a native %s entry", a.RuntimeKind())
		}
		refusals = append(refusals, a.RefuseNative())
	}
	for _, err := range refusals {
		var d *diag.Diagnostic
		if err != nil && (!errors.As(err, &d) || d.Code != "E-MAN-029" || !fuzzPrefix.MatchString(d.Message) || strings.ContainsAny(d.Message, "\n\r\x1b")) {
			t.Fatalf("bad refusal %v", err)
		}
	}
}
