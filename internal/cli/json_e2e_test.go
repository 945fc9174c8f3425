package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// jsonErr is the --json error object (docs/cli.md).
type jsonErr struct {
	Error *struct {
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Hint    *string `json:"hint"`
	} `json:"error"`
}

// oneJSON decodes stdout as exactly one JSON value on one line into v.
func oneJSON(t *testing.T, stdout string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("stdout has %d lines, want one JSON line:\n%s", len(lines), stdout)
	}
	if err := json.Unmarshal([]byte(lines[0]), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestListAndDoctorJSON(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	publishEchoTool(t, homeDir, base) // acme/echo@1.0.0 in the global store
	proj := filepath.Join(base, "app")
	writeFiles(t, proj, map[string]string{"murmur.yaml": "name: app\nversion: 0.1.0\nartifacts:\n  - name: acme/echo\n    version: 1.0.0\n  - name: acme/missing\n    version: 3.0.0\n"})

	type row struct {
		Name, Version, Runtime, SHA256, Scope string
		Problem                               *string
	}
	var rows []row
	r := runMur(t, homeDir, proj, nil, "list", "--json")
	expectOK(t, r)
	if oneJSON(t, r.Stdout, &rows); len(rows) != 0 || strings.TrimSpace(r.Stdout) != "[]" {
		t.Errorf("an empty project store: want [], got %q", r.Stdout)
	}
	r = runMur(t, homeDir, proj, nil, "list", "--all", "--json")
	expectOK(t, r)
	oneJSON(t, r.Stdout, &rows)
	if len(rows) != 1 || rows[0].Name != "acme/echo" || rows[0].Version != "1.0.0" || rows[0].Runtime != "tool" ||
		rows[0].Scope != "global" || !sha256Hex.MatchString(rows[0].SHA256) || rows[0].Problem != nil {
		t.Errorf("list --all --json: %+v", rows)
	}

	type artifact struct {
		Name, Version, Runtime, Store, SHA256 string
		OK, Locked                            bool
		Error                                 *struct{ Code, Message string }
	}
	var rep struct {
		Project, Manifest, Name, Version, Build string
		Lock                                    struct {
			File, State string
			Pinned      int
			Stale       []string
		}
		Artifacts []artifact
		Problems  int
		OK        bool
	}
	r = runMur(t, homeDir, proj, nil, "doctor", "--json")
	expectFail(t, r, "E-REG-001", 1) // the missing artifact's diagnostic, on stderr
	oneJSON(t, r.Stdout, &rep)
	// testbin builds the split mur that scripts/install.sh ships.
	if rep.Name != "local/app" || rep.Version != "0.1.0" || rep.Build != "murdriver" || rep.OK || rep.Problems != 1 || rep.Lock.State != "none" ||
		rep.Lock.Stale == nil || len(rep.Artifacts) != 2 {
		t.Fatalf("doctor --json: %+v", rep)
	}
	if a := rep.Artifacts[0]; !a.OK || a.Name != "acme/echo" || a.Store != "global" || a.Runtime != "tool" || !sha256Hex.MatchString(a.SHA256) || a.Locked || a.Error != nil {
		t.Errorf("the installed artifact: %+v", a)
	}
	if a := rep.Artifacts[1]; a.OK || a.Error == nil || a.Error.Code != "E-REG-001" || a.Error.Message == "" {
		t.Errorf("the missing artifact: %+v", a)
	}
	if !strings.Contains(r.Stderr, "error[E-REG-018]") {
		t.Errorf("doctor --json's summary error is not on stderr:\n%s", r.Stderr)
	}

	// Without --json, the checklist is on stdout and every diagnostic on stderr.
	r = runMur(t, homeDir, proj, nil, "doctor")
	expectFail(t, r, "E-REG-001", 1)
	if strings.Contains(r.Stdout, "error[") || !strings.Contains(r.Stdout, "FAIL  acme/missing@3.0.0") || !strings.Contains(r.Stdout, "ok    acme/echo@1.0.0") {
		t.Errorf("doctor: stdout\n%s\nstderr\n%s", r.Stdout, r.Stderr)
	}
}

// Every command with --json: a failure prints one JSON error object on
// stdout, the diagnostic on stderr, and exits as it does without --json.
func TestJSONErrors(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	outside := filepath.Join(base, "nowhere")
	os.MkdirAll(outside, 0o755)
	proj := filepath.Join(base, "app")
	writeFiles(t, proj, map[string]string{"murmur.yaml": "name: app\nversion: 0.1.0\n"})
	broken := filepath.Join(base, "broken")
	writeFiles(t, broken, map[string]string{"murmur.yaml": "name: [\n"})
	for _, tc := range []struct {
		name   string
		dir    string
		env    []string
		args   []string // without --json
		code   string
		status int
	}{
		{"list outside a project", outside, nil, []string{"list"}, "E-REG-017", 1},
		{"doctor outside a project", outside, nil, []string{"doctor"}, "E-REG-017", 1},
		{"doctor on a broken manifest", broken, nil, []string{"doctor"}, "E-MAN-002", 1},
		{"ps with a relative HOME", outside, []string{"HOME=relative"}, []string{"ps"}, "E-IO-003", 1},
		{"trace show of nothing", outside, nil, []string{"trace", "show", "@1"}, "", 1},
		{"run without a component", proj, nil, []string{"run"}, "E-RUN-003", 1},
		{"a usage error", outside, nil, []string{"ps", "--bogus"}, "E-CFG-001", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := runMur(t, homeDir, tc.dir, tc.env, tc.args...)
			r := runMur(t, homeDir, tc.dir, tc.env, append(tc.args, "--json")...)
			if plain.Code != tc.status || r.Code != plain.Code {
				t.Fatalf("exit %d with --json, %d without; want %d\n%+v", r.Code, plain.Code, tc.status, r)
			}
			var e jsonErr
			oneJSON(t, r.Stdout, &e)
			if e.Error == nil || e.Error.Message == "" || (tc.code != "" && e.Error.Code != tc.code) ||
				!strings.Contains(r.Stderr, "error["+e.Error.Code+"]: "+e.Error.Message) {
				t.Fatalf("want {\"error\":{\"code\":%q,…}} matching stderr; got %s\nstderr: %s", tc.code, r.Stdout, r.Stderr)
			}
			if strings.Contains(r.Stderr, "hint:") != (e.Error.Hint != nil) {
				t.Errorf("hint in JSON %v, on stderr %v", e.Error.Hint != nil, strings.Contains(r.Stderr, "hint:"))
			}
			if plain.Stdout != "" && tc.status == 2 {
				t.Errorf("without --json a usage error printed on stdout: %q", plain.Stdout)
			}
		})
	}
}

func TestUsageSuggestions(t *testing.T) {
	homeDir, dir := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ru"}, "hint: did you mean mur ps or mur run? run 'mur --help' for usage"},
		{[]string{"run", "--manfest", "x"}, "hint: did you mean --manifest? run 'mur run --help' for usage"},
	} {
		r := runMur(t, homeDir, dir, nil, tc.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want+"\n") || strings.Contains(r.Stderr, "\t") {
			t.Errorf("mur %v: want exit 2 and %q, no tabs; got %d %q", tc.args, tc.want, r.Code, r.Stderr)
		}
	}
}

// mur build -o DIR writes the usual file name into DIR.
func TestBuildOutputDir(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	tool := filepath.Join(base, "tool")
	writeFiles(t, tool, map[string]string{"murmur.yaml": "name: acme/skilly\nversion: 1.2.0\nruntime: skill\ndescription: A skill.\n", "skill.md": "# Skilly\n"})
	out := filepath.Join(base, "out")
	os.MkdirAll(out, 0o755)
	expectOK(t, runMur(t, homeDir, tool, nil, "build", "-o", out))
	if _, err := os.Stat(filepath.Join(out, "skilly-1.2.0.mur.zip")); err != nil {
		t.Fatalf("mur build -o DIR: %v", err)
	}
}
