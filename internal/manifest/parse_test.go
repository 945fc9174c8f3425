package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

// env is a LookupEnv over a fixed map, so tests never depend on the
// process environment.
func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func mustParse(t *testing.T, src string) *Manifest {
	t.Helper()
	m, err := Parse([]byte(src), "", Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatalf("Parse: %v\n--- source ---\n%s", err, src)
	}
	return m
}

// head is a valid start every error case builds on (lines 1-2).
const head = "name: x\nversion: \"1\"\n"

type errorCase struct {
	name string
	src  string
	code string
	at   string // "line:col"
	has  string // substring of the message
}

// errorCases cover every invalid shape; the fuzz corpus holds them too.
var errorCases = func() []errorCase {
	long := head + "tags:\n" + strings.Repeat("  - t\n", MaxListEntries+1)
	return []errorCase{
		{"malformed flow list", "name: x\nversion: [\n", "E-MAN-002", "2:1", "malformed YAML"},
		{"bad indentation", "name: x\n  version: 1\n", "E-MAN-002", "2:1", "mapping values are not allowed"},
		{"tab indentation", "\tname: x\n", "E-MAN-002", "1:1", "malformed YAML"},
		{"unterminated quote", head + "foo: 'open\n", "E-MAN-002", "3:1", "malformed YAML"},
		{"empty file", "", "E-MAN-018", "1:1", "empty"},
		{"comment only", "# nothing\n", "E-MAN-018", "1:1", "empty"},
		{"document marker only", "---\n", "E-MAN-018", "1:1", "empty"},
		{"top-level list", "- a\n- b\n", "E-MAN-019", "1:1", "must be a mapping"},
		{"top-level scalar", "hello\n", "E-MAN-019", "1:1", "a single value"},
		{"missing name", "version: \"1\"\n", "E-MAN-001", "1:1", "missing required key 'name'"},
		{"empty name", "name: \"\"\nversion: \"1\"\n", "E-MAN-001", "1:7", "name is empty"},
		{"missing version", "name: x\n", "E-MAN-001", "1:1", "missing required key 'version'"},
		{"invalid name", "name: Bad_Name\nversion: \"1\"\n", "E-MAN-005", "1:7", `"Bad_Name" is not a valid name`},
		{"three-part name", "name: a/b/c\nversion: \"1\"\n", "E-MAN-005", "1:7", "not a valid name"},
		{"name too long", "name: " + strings.Repeat("a", 64) + "\nversion: \"1\"\n", "E-MAN-005", "1:7", "not a valid name"},
		{"name is a list", "name: [a]\nversion: \"1\"\n", "E-MAN-004", "1:7", "name: expected a string, found a list"},
		{"reserved version", "name: x\nversion: latest\n", "E-MAN-006", "2:10", `"latest" is a reserved version`},
		{"reserved version edge", "name: x\nversion: edge\n", "E-MAN-006", "2:10", "reserved"},
		{"empty version", "name: x\nversion:\n", "E-MAN-006", "2:9", "version is empty"},
		{"version with slash", "name: x\nversion: 1/2\n", "E-MAN-006", "2:10", "not a usable version"},
		{"duplicate key", "name: x\nversion: \"1\"\nname: y\n", "E-MAN-010", "3:1", "first at line 1, column 1"},
		{"runtime enum", head + "runtime: service\n", "E-MAN-007", "3:10", `"service" is not one of capsule, tool, driver, hook, skill, wasm, native`},
		{"tags not a list", head + "tags: x\n", "E-MAN-004", "3:7", "tags: expected a list, found a single value"},
		{"tag item a map", head + "tags:\n  - {a: 1}\n", "E-MAN-004", "4:5", "tags[0]: expected a string"},
		{"too many entries", long, "E-MAN-025", "4:3", "more than the 1024"},
		{"requires_files dotdot", head + "requires_files: [../secret]\n", "E-MAN-014", "3:18", "'..' component"},
		{"requires_files dotdot inside", head + "requires_files: [a/../../b]\n", "E-MAN-014", "3:18", "'..' component"},
		{"requires_files absolute", head + "requires_files: [/etc/passwd]\n", "E-MAN-014", "3:18", "not a relative path"},
		{"artifacts not a list", head + "artifacts: {}\n", "E-MAN-004", "3:12", "artifacts: expected a list, found a mapping"},
		{"artifact a scalar", head + "artifacts:\n  - murmur/x\n", "E-MAN-004", "4:5", "artifacts[0]: expected a mapping"},
		{"artifact missing name", head + "artifacts:\n  - version: \"1\"\n", "E-MAN-001", "4:5", "artifacts[0]: missing required key 'name'"},
		{"artifact missing version", head + "artifacts:\n  - name: a/b\n", "E-MAN-001", "4:5", "artifacts[0]: missing required key 'version'"},
		{"artifact reserved version", head + "artifacts:\n  - name: a/b\n    version: stable\n", "E-MAN-006", "5:14", "reserved"},
		{"artifact runtime capsule", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    runtime: capsule\n", "E-MAN-007", "6:14", "not one of tool, driver, hook, skill"},
		{"duplicate artifact", head + "artifacts:\n  - {name: a/b, version: \"1\"}\n  - {name: a/b, version: \"2\"}\n", "E-MAN-009", "5:6", "declared twice (first at line 4, column 6)"},
		{"gateway endpoint scheme", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    gateway:\n      endpoint: ftp://x\n", "E-MAN-024", "7:17", "not an http:// or https:// URL"},
		{"api_key unset", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    gateway:\n      api_key: ${ANTHROPIC_API_KEY}\n", "E-MAN-003", "7:16",
			"artifacts[0].gateway.api_key references ${ANTHROPIC_API_KEY}, which is not set"},
		{"api_key partial ref", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    gateway:\n      api_key: sk-${KEY\n", "E-MAN-021", "7:16", "must be the whole value"},
		{"config a list", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    config: [1]\n", "E-MAN-004", "6:13", "expected a mapping"},
		{"config infinite", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    config:\n      x: [1, .inf]\n", "E-MAN-004", "7:14", "artifacts[0].config.x[1]: \".inf\" is not a finite number"},
		{"config complex key", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    config:\n      a: {? [k] : v}\n", "E-MAN-004", "7:13", "artifacts[0].config.a: expected a plain key"},
		{"config duplicate key", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    config:\n      a: 1\n      a: 2\n", "E-MAN-010", "8:7", "artifacts[0].config.a: the key appears twice"},
		{"hook deadline zero", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    runtime: hook\n    deadline_seconds: 0\n", "E-MAN-008", "7:23", "not a whole number from 1"},
		{"capabilities a list", head + "capabilities: []\n", "E-MAN-004", "3:15", "capabilities: expected a mapping, found a list"},
		{"containment enum", head + "capabilities:\n  containment: strict\n", "E-MAN-007", "4:16", `"strict" is not one of advisory, scoped, sealed`},
		{"unix_sockets yes", head + "capabilities:\n  network:\n    unix_sockets: yes\n", "E-MAN-004", "5:19", "expected true or false"},
		{"unix_sockets quoted", head + "capabilities:\n  network:\n    unix_sockets: \"true\"\n", "E-MAN-004", "5:19", "expected true or false"},
		{"workdir_exec list", head + "capabilities:\n  filesystem:\n    workdir_exec: []\n", "E-MAN-004", "5:19", "expected true or false, found a list"},
		{"network path", head + "capabilities:\n  network:\n    allow: [\"https://api.example.com/v1\"]\n", "E-CAP-001", "5:13", "has a path"},
		{"network query", head + "capabilities:\n  network:\n    allow:\n      - example.com?x=1\n", "E-CAP-001", "6:9", "has a query"},
		{"network fragment", head + "capabilities:\n  network:\n    allow:\n      - \"example.com#x\"\n", "E-CAP-001", "6:9", "has a fragment"},
		{"network userinfo", head + "capabilities:\n  network:\n    allow:\n      - https://u:p@example.com\n", "E-CAP-001", "6:9", "user information"},
		{"network port zero", head + "capabilities:\n  network:\n    allow:\n      - example.com:0\n", "E-CAP-001", "6:9", "port \"0\""},
		{"network port high", head + "capabilities:\n  network:\n    allow:\n      - https://example.com:65536\n", "E-CAP-001", "6:9", "from 1 to 65535"},
		{"network scheme", head + "capabilities:\n  network:\n    allow:\n      - ftp://example.com\n", "E-CAP-001", "6:9", "scheme \"ftp\""},
		{"network wildcard", head + "capabilities:\n  network:\n    allow:\n      - \"*.example.com\"\n", "E-CAP-001", "6:9", "not a host"},
		{"network not list", head + "capabilities:\n  network:\n    allow: example.com\n", "E-MAN-004", "5:12", "expected a list"},
		{"peer_fetch path", head + "capabilities:\n  peer_fetch:\n    allow: [\"http://127.0.0.1:8080/x\"]\n", "E-CAP-001", "5:13", "has a path"},
		{"scope absolute", head + "capabilities:\n  filesystem:\n    scope: /etc\n", "E-CAP-002", "5:12", "is absolute"},
		{"scope escapes", head + "capabilities:\n  filesystem:\n    scope: ../up\n", "E-CAP-002", "5:12", "leaves the work folder"},
		{"scope escapes after clean", head + "capabilities:\n  filesystem:\n    scope: a/../../b\n", "E-CAP-002", "5:12", "leaves the work folder"},
		{"scope empty", head + "capabilities:\n  filesystem:\n    scope: \"\"\n", "E-CAP-002", "5:12", "scope is empty"},
		{"spawn bare name", head + "capabilities:\n  spawn:\n    allow: [worker]\n", "E-MAN-005", "5:13", `"worker" is not a full name`},
		{"spawn bare name twice", head + "capabilities:\n  spawn:\n    allow: [local/worker, acme/worker]\n", "E-MAN-027", "5:27",
			`capabilities.spawn.allow[1]: acme/worker shares the bare name "worker" with local/worker (line 5, column 13)`},
		{"spawn bare name twice, block list", head + "capabilities:\n  spawn:\n    allow:\n      - local/a\n      - local/worker\n      - acme/worker\n", "E-MAN-027", "8:9", "one of them could never be delegated to"},
		{"artifact spawn bare name twice", head + "capabilities:\n  spawn:\n    allow: [local/worker, acme/worker2]\nartifacts:\n  - name: a/b\n    version: \"1\"\n    capabilities:\n      spawn:\n        allow: [local/worker, team/worker]\n",
			"E-MAN-027", "11:31", "artifacts[0].capabilities.spawn.allow[1]: team/worker shares the bare name"},
		{"snapshot not in allow", head + "capabilities:\n  spawn:\n    allow: [local/a]\n    workdir_snapshot: [local/a, local/b]\n", "E-MAN-011", "6:33",
			"capabilities.spawn.workdir_snapshot[1]: local/b is not in capabilities.spawn.allow"},
		{"artifact snapshot not in allow", head + "capabilities:\n  spawn:\n    allow: [local/a]\n    workdir_snapshot: [local/a]\nartifacts:\n  - name: a/b\n    version: \"1\"\n    capabilities:\n      spawn:\n        workdir_snapshot: [local/a]\n",
			"E-MAN-011", "12:28", "artifacts[0].capabilities.spawn.workdir_snapshot[0]: local/a is not in artifacts[0].capabilities.spawn.allow"},
		{"shell path", head + "capabilities:\n  shell:\n    allow: [/bin/bash]\n", "E-MAN-012", "5:13", "not a bare binary name"},
		{"shell control character", head + "capabilities:\n  shell:\n    allow: [\"ba\\esh\"]\n", "E-MAN-012", "5:13", `"ba\x1bsh" is not a bare binary name`},
		{"shell empty", head + "capabilities:\n  shell:\n    allow: [\"\"]\n", "E-MAN-012", "5:13", "not a bare binary name"},
		{"env digit", head + "capabilities:\n  env:\n    allow: [1PATH]\n", "E-MAN-013", "5:13", "not an environment variable name"},
		{"env dash", head + "capabilities:\n  env:\n    allow: [MY-VAR]\n", "E-MAN-013", "5:13", "not an environment variable name"},
		{"install star inside", head + "capabilities:\n  install:\n    skill: [\"a*b\"]\n", "E-MAN-023", "5:13", "not an install pattern"},
		{"limit zero", head + "capabilities:\n  limits:\n    memory_bytes: 0\n", "E-MAN-008", "5:19", "not a whole number from 1"},
		{"limit negative", head + "capabilities:\n  limits:\n    deadline_seconds: -5\n", "E-MAN-008", "5:23", "not a whole number from 1"},
		{"limit text", head + "capabilities:\n  limits:\n    instances: many\n", "E-MAN-008", "5:16", `expected a positive whole number, found "many"`},
		{"limit float", head + "capabilities:\n  limits:\n    table_elements: 1.5\n", "E-MAN-008", "5:21", "expected a positive whole number"},
		{"deadline beyond int32", head + "capabilities:\n  limits:\n    deadline_seconds: 99999999999\n", "E-MAN-008", "5:23", "from 1 to 2147483647"},
		{"resources zero", head + "capabilities:\n  resources:\n    workdir_max_bytes: 0\n", "E-MAN-008", "5:24", "not a whole number"},
		{"state store name", head + "artifacts:\n  - name: a/b\n    version: \"1\"\n    capabilities:\n      state: {store: Bad}\n", "E-MAN-022", "7:22", `"Bad" is not a valid store name`},
		{"transport enum", head + "inference:\n  transport: grpc\n", "E-MAN-007", "4:14", `"grpc" is not one of http, process`},
		{"max_turns zero", head + "inference:\n  max_turns: 0\n", "E-MAN-008", "4:14", "not a whole number"},
		{"driver undeclared", head + "inference:\n  driver:\n    artifact: murmur/driver-x\n", "E-MAN-016", "5:5", `"murmur/driver-x" is not an artifact declared with runtime: driver`},
		{"driver is a tool", head + "artifacts:\n  - {name: murmur/driver-x, version: \"1\"}\ninference:\n  driver:\n    artifact: murmur/driver-x\n", "E-MAN-016", "7:5", "runtime: driver"},
		{"prompt exclusive", head + "inference:\n  system_prompt: hi\n  system_prompt_file: p.md\n", "E-MAN-017", "5:3", "exclusive"},
		{"prompt file escapes", head + "inference:\n  system_prompt_file: ../p.md\n", "E-MAN-014", "4:23", "'..' component"},
		{"task_acceptance enum", head + "lifecycle:\n  task_acceptance: many\n", "E-MAN-007", "4:20", "not one of none, single, queue"},
		{"after_task enum", head + "lifecycle:\n  after_task: stay\n", "E-MAN-007", "4:15", "not one of exit, sleep"},
		{"queue_depth zero", head + "lifecycle:\n  queue_depth: 0\n", "E-MAN-008", "4:16", "not a whole number"},
		{"delegation deadline text", head + "lifecycle:\n  delegation_deadline_secs: soon\n", "E-MAN-008", "4:29", "expected a positive whole number"},
		{"input timeout zero", head + "lifecycle:\n  input_timeout_secs: 0\n", "E-MAN-008", "4:23", "not a whole number"},
		{"approval enum", head + "inference: {model: m}\ncapabilities:\n  shell:\n    allow: [bash]\ntools:\n  bash: {approval: ask}\n", "E-MAN-007", "8:20", `"ask" is not one of required, none`},
		{"tools key names no tool", head + "inference: {model: m}\ncapabilities:\n  shell:\n    allow: [bash]\ntools:\n  zsh: {approval: required}\n", "E-MAN-032", "8:3",
			`tools.zsh: "zsh" names no tool of this capsule; its tools are bash`},
		{"tools bare name shared", head + "inference: {model: m}\nartifacts:\n  - {name: a/echo, version: \"1\"}\n  - {name: b/echo, version: \"1\"}\ntools:\n  echo: {approval: required}\n", "E-MAN-032", "8:3",
			`"echo" is the bare name of a/echo and b/echo`},
		{"delegate-task without spawn", head + "inference: {model: m}\ntools:\n  delegate-task: {approval: required}\n", "E-MAN-032", "5:3", "names no tool of this capsule; its tools are (none)"},
		{"approval in a script", head + "capabilities:\n  shell:\n    allow: [bash]\ntools:\n  bash: {approval: required}\n", "E-MAN-033", "7:3", "script capsule"},
		{"otel endpoint", head + "observability:\n  otel_endpoint: collector:4318\n", "E-MAN-024", "4:18", "not an http:// or https:// URL"},
		{"max_age unit", head + "trace:\n  retain:\n    max_age: 7x\n", "E-MAN-015", "5:14", "neither a Go duration nor a number of days"},
		{"max_age negative", head + "trace:\n  retain:\n    max_age: -1h\n", "E-MAN-015", "5:14", "not a positive duration"},
		{"max_age zero days", head + "trace:\n  retain:\n    max_age: 0d\n", "E-MAN-015", "5:14", "not a usable number of days"},
		{"max_sessions zero", head + "trace:\n  retain:\n    max_sessions: 0\n", "E-MAN-008", "5:19", "not a whole number"},
		{"complex key", head + "? [a]\n: b\n", "E-MAN-004", "3:3", "expected a plain key"},
		{"too large", head + "description: \"" + strings.Repeat("x", MaxManifestBytes) + "\"\n", "E-MAN-020", "1:1", "larger than"},
		{"alias fan-out", aliasBomb(), "E-MAN-025", "", "too complex"},
	}
}()

func TestParseErrors(t *testing.T) {
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Parse([]byte(c.src), "", Options{LookupEnv: env(nil)})
			if err == nil {
				t.Fatalf("no error; want %s (manifest %+v)", c.code, m)
			}
			if m != nil {
				t.Errorf("a manifest came back with the error")
			}
			var d *diag.Diagnostic
			if !errors.As(err, &d) {
				t.Fatalf("error %T is not a *diag.Diagnostic: %v", err, err)
			}
			if d.Code != c.code {
				t.Errorf("code %s, want %s: %s", d.Code, c.code, d.Message)
			}
			prefix := "murmur.yaml:" + c.at + ": "
			if c.at == "" {
				prefix = "murmur.yaml:"
			}
			if !strings.HasPrefix(d.Message, prefix) {
				t.Errorf("message %q does not start with %q", d.Message, prefix)
			}
			if !strings.Contains(d.Message, c.has) {
				t.Errorf("message %q does not contain %q", d.Message, c.has)
			}
			if strings.Contains(d.Message, "\n") {
				t.Errorf("message spans lines: %q", d.Message)
			}
		})
	}
}

// aliasBomb names one large capabilities block from many artifacts, which
// costs far more to walk than the file's size suggests.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString(head + "x-caps: &caps\n  shell:\n    allow: [")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "b%d, ", i)
	}
	b.WriteString("z]\nartifacts:\n")
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, "  - {name: a/t%d, version: \"1\", capabilities: *caps}\n", i)
	}
	return b.String()
}

func TestParseFileNameInMessages(t *testing.T) {
	_, err := Parse([]byte("name: x\nversion: latest\n"), "caps/worker/murmur.yaml", Options{})
	if !strings.HasPrefix(diag.Code(err)+" "+err.(*diag.Diagnostic).Message, "E-MAN-006 caps/worker/murmur.yaml:2:10: ") {
		t.Fatalf("got %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "murmur.yaml")
	if err := os.WriteFile(p, []byte("name: worker-a\nversion: \"0.1.0\"\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.File != p || m.Name != "local/worker-a" || m.DeclaredName != "worker-a" || m.Version != "0.1.0" {
		t.Fatalf("got %+v", m)
	}
	if len(m.Warnings) != 1 || !strings.HasPrefix(m.Warnings[0].Message, p+":3:1: ") {
		t.Fatalf("warnings %+v", m.Warnings)
	}

	_, err = Load(filepath.Join(dir, "missing.yaml"), Options{})
	if diag.Code(err) != "E-MAN-020" || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	_, err = Load(dir, Options{}) // a directory
	if diag.Code(err) != "E-MAN-020" {
		t.Fatalf("directory: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, append([]byte(head+"description: "), make([]byte, MaxManifestBytes)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = Load(big, Options{}); diag.Code(err) != "E-MAN-020" {
		t.Fatalf("big file: %v", err)
	}
}

const agentYAML = `# an agent capsule
name: my-agent
version: "0.1.0"
description: answers questions
tags: [demo, agent]
requires_files: [prompts/./system.md]

artifacts:
  - name: murmur/driver-anthropic
    version: "0.19.0"
    runtime: driver
    gateway:
      endpoint: https://api.anthropic.com
      api_key: ${ANTHROPIC_API_KEY}
  - name: acme/grep
    version: "1.2.0"
    config:
      depth: 3
      paths: [src, docs]
  - name: acme/audit
    version: "0.3.0"
    runtime: hook
    deadline_seconds: 45

capabilities:
  network:
    allow: [api.anthropic.com, "HTTPS://Example.com:8443"]
    unix_sockets: false
  shell:
    allow:
      - bash
  spawn:
    allow: [local/worker-a, acme/reviewer]
    workdir_snapshot: [local/worker-a]
  env:
    allow: [HOME, GIT_AUTHOR_NAME]
  filesystem:
    scope: ./src/
    workdir_exec: true
  install:
    skill: ["*"]
    tool: [acme-*, murmur/fmt]
  containment: scoped
  limits:
    deadline_seconds: 120
    memory_bytes: 268435456
  resources:
    workdir_max_bytes: 1073741824

inference:
  transport: http
  model: claude-sonnet-5
  driver:
    artifact: driver-anthropic
  max_turns: 20
  system_prompt_file: prompts/system.md

lifecycle:
  task_acceptance: queue
  after_task: sleep
  queue_depth: 4
  delegation_deadline_secs: 300

observability:
  otel_endpoint: http://127.0.0.1:4318

trace:
  retain:
    max_sessions: 50
    max_age: 7d
`

func TestParseAgent(t *testing.T) {
	m, err := Parse([]byte(agentYAML), "", Options{LookupEnv: env(map[string]string{"ANTHROPIC_API_KEY": "sk-test-123"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("unexpected warnings %v", m.Warnings)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	check("Name", m.Name, "local/my-agent")
	check("DeclaredName", m.DeclaredName, "my-agent")
	check("Version", m.Version, "0.1.0")
	check("Runtime", m.Runtime, Opt[string]{})
	check("RuntimeKind", m.RuntimeKind(), "capsule")
	check("Description", m.Description, "answers questions")
	check("Tags", m.Tags, []string{"demo", "agent"})
	check("RequiresFiles", m.RequiresFiles, []string{"prompts/system.md"})
	check("IsAgent", m.IsAgent(), true)

	if len(m.Artifacts) != 3 {
		t.Fatalf("artifacts %+v", m.Artifacts)
	}
	d := m.Artifacts[0]
	check("driver", []any{d.Name, d.Version, d.RuntimeKind(), d.Pos}, []any{"murmur/driver-anthropic", "0.19.0", "driver", Pos{9, 5}})
	check("gateway", *d.Gateway, Gateway{Endpoint: "https://api.anthropic.com", APIKey: "sk-test-123", APIKeyRef: "${ANTHROPIC_API_KEY}"})
	check("tool runtime default", m.Artifacts[1].Runtime, Opt[string]{})
	check("tool RuntimeKind", m.Artifacts[1].RuntimeKind(), "tool")
	check("config", m.Artifacts[1].Config, map[string]any{"depth": 3, "paths": []any{"src", "docs"}})
	check("hook deadline", m.Artifacts[2].DeadlineSeconds, Some(45))

	c := m.Capabilities
	check("network", c.Network, Network{Allow: []string{"api.anthropic.com", "https://example.com:8443"}, UnixSockets: Some(false)})
	check("shell", c.Shell.Allow, []string{"bash"})
	check("spawn", c.Spawn, Spawn{Allow: []string{"local/worker-a", "acme/reviewer"}, WorkdirSnapshot: []string{"local/worker-a"}})
	check("env", c.Env.Allow, []string{"HOME", "GIT_AUTHOR_NAME"})
	check("filesystem", c.Filesystem, Filesystem{Scope: Some("src"), WorkdirExec: Some(true)})
	check("install", c.Install, Install{Skill: []string{"*"}, Tool: []string{"acme-*", "murmur/fmt"}})
	check("containment", c.ContainmentClass(), "scoped")
	check("limits", c.Limits, Limits{DeadlineSeconds: Some(120), MemoryBytes: Some[int64](268435456)})
	check("resources", c.Resources.WorkdirMaxBytes, Some[int64](1<<30))
	check("peer_fetch", c.PeerFetch.Allow, []string(nil))

	in := m.Inference
	check("inference", *in, Inference{Transport: Some("http"), Model: "claude-sonnet-5", DriverArtifact: "murmur/driver-anthropic",
		MaxTurns: Some(20), SystemPromptFile: "prompts/system.md"})
	check("max_tokens default", in.MaxTokens.Or(DefaultMaxTokens), 8192)
	check("transport", in.TransportKind(), "http")
	check("lifecycle accessors", []string{m.Lifecycle.Acceptance(), m.Lifecycle.AfterTaskMode()}, []string{"queue", "sleep"})
	check("lifecycle defaults", []string{Lifecycle{}.Acceptance(), Lifecycle{}.AfterTaskMode(), (&Inference{}).TransportKind()}, []string{"single", "exit", "http"})
	check("lifecycle", m.Lifecycle, Lifecycle{TaskAcceptance: Some("queue"), AfterTask: Some("sleep"), QueueDepth: Some(4), DelegationDeadlineSecs: Some(300)})
	check("otel", m.Observability.OtelEndpoint, "http://127.0.0.1:4318")
	age, ok := m.Trace.Retain.MaxAgeDuration()
	check("max_age", []any{age.Hours(), ok, m.Trace.Retain.MaxSessions}, []any{168.0, true, Some(50)})

	// Declared key paths and where they were written.
	for path, pos := range map[string]Pos{
		"name": {2, 1}, "artifacts": {8, 1}, "artifacts[0]": {9, 5}, "artifacts[0].gateway.api_key": {14, 7},
		"artifacts[1].config": {17, 5}, "capabilities.network.allow": {27, 5}, "capabilities.network.allow[1]": {27, 32},
		"capabilities.filesystem.scope": {38, 5}, "inference.driver.artifact": {54, 5}, "trace.retain.max_age": {70, 5},
	} {
		if !m.Declared(path) || m.PosOf(path) != pos {
			t.Errorf("PosOf(%q) = %v (declared %v), want %v", path, m.PosOf(path), m.Declared(path), pos)
		}
	}
	for _, path := range []string{"runtime", "capabilities.peer_fetch", "inference.max_tokens", "artifacts[1].gateway", "artifacts[3]"} {
		if m.Declared(path) {
			t.Errorf("Declared(%q) is true", path)
		}
	}
	if a, ok := m.ArtifactByName("grep"); !ok || a.Name != "acme/grep" {
		t.Errorf("ArtifactByName(grep) = %v, %v", a, ok)
	}
	if a, ok := m.ArtifactByName("acme/audit"); !ok || a.Name != "acme/audit" {
		t.Errorf("ArtifactByName(acme/audit) = %v, %v", a, ok)
	}
	for _, n := range []string{"other/grep", "gre", "", "murmur/grep"} {
		if _, ok := m.ArtifactByName(n); ok {
			t.Errorf("ArtifactByName(%q) found something", n)
		}
	}
}

func TestDefaultsAndShapes(t *testing.T) {
	m := mustParse(t, "name: acme/tool-x\nversion: 1.0\nruntime: tool\ndescription:\ntags:\ncapabilities:\n  network:\n    allow:\n  limits: {}\n")
	if m.Name != "acme/tool-x" || m.DeclaredName != "acme/tool-x" {
		t.Errorf("a full name must be kept: %q %q", m.Name, m.DeclaredName)
	}
	if m.Version != "1.0" {
		t.Errorf("version written as 1.0 reads %q", m.Version)
	}
	if m.RuntimeKind() != "tool" || m.IsAgent() {
		t.Errorf("runtime %q agent %v", m.RuntimeKind(), m.IsAgent())
	}
	if m.Tags == nil || len(m.Tags) != 0 || m.Capabilities.Network.Allow == nil || len(m.Capabilities.Network.Allow) != 0 {
		t.Errorf("an empty list must read as declared-empty: %#v %#v", m.Tags, m.Capabilities.Network.Allow)
	}
	if !m.Declared("capabilities.network.allow") || !m.Declared("description") {
		t.Error("empty values must still count as declared")
	}
	c := m.Capabilities
	if c.ContainmentClass() != "advisory" {
		t.Errorf("undeclared containment reads %q", c.ContainmentClass())
	}
	want := EffLimits{DeadlineSeconds: 600, HookDeadlineSeconds: 30, MemoryBytes: 512 << 20, TableElements: 100000, Instances: 1000, WorkdirMaxBytes: 10 << 30}
	if got := c.EffLimits(); got != want {
		t.Errorf("default limits %+v, want %+v", got, want)
	}
	m = mustParse(t, head+"capabilities:\n  limits:\n    deadline_seconds: 90\n")
	if got := m.Capabilities.EffLimits(); got.DeadlineSeconds != 90 || got.HookDeadlineSeconds != 90 {
		t.Errorf("a declared deadline must replace both defaults: %+v", got)
	}
	// An inference block with nothing in it still makes an agent.
	if m := mustParse(t, head+"inference:\n"); !m.IsAgent() || m.Inference.Transport.Or("http") != "http" {
		t.Errorf("inference: alone should make an agent capsule")
	}
	// Hex and underscore integers are YAML integers.
	m = mustParse(t, head+"capabilities:\n  limits:\n    memory_bytes: 0x1000\n    instances: 1_000\n")
	if m.Capabilities.Limits.MemoryBytes.V != 4096 {
		t.Errorf("memory_bytes 0x1000 = %d", m.Capabilities.Limits.MemoryBytes.V)
	}
	// A bare name is normalised; names with digits and inner dashes are fine.
	if m := mustParse(t, "name: 0-worker-9\nversion: \"2\"\n"); m.Name != "local/0-worker-9" {
		t.Errorf("got %q", m.Name)
	}
	// Aliases are followed.
	m = mustParse(t, head+"x-hosts: &h [example.com]\ncapabilities:\n  network:\n    allow: *h\n  peer_fetch:\n    allow: *h\n")
	if !reflect.DeepEqual(m.Capabilities.PeerFetch.Allow, []string{"example.com"}) {
		t.Errorf("alias not followed: %#v", m.Capabilities.PeerFetch.Allow)
	}
}

func TestUnknownKeyWarnings(t *testing.T) {
	src := head + // 1-2
		"colour: blue\n" + // 3
		"capabilities:\n" + // 4
		"  netwrk: {}\n" + // 5
		"  network:\n" + // 6
		"    allowed: [x]\n" + // 7
		"  state: {}\n" + // 8
		"artifacts:\n" + // 9
		"  - name: a/b\n" + // 10
		"    version: \"1\"\n" + // 11
		"    extra: 1\n" + // 12
		"    deadline_seconds: 5\n" + // 13
		"    config:\n" + // 14
		"      anything: {goes: [here]}\n" + // 15
		"    gateway: {endpoint: \"https://x.example\", proxy: y}\n" + // 16
		"inference:\n" + // 17
		"  driver: {artifact_name: z}\n" // 18
	m := mustParse(t, src)
	var got []string
	for _, w := range m.Warnings {
		got = append(got, w.Code+" "+w.Message)
		if w.Pos == (Pos{}) {
			t.Errorf("warning without a position: %v", w)
		}
	}
	want := []string{
		"W-MAN-001 murmur.yaml:3:1: unknown key 'colour' is ignored",
		"W-MAN-001 murmur.yaml:5:3: unknown key 'capabilities.netwrk' is ignored; did you mean 'network'?",
		"W-MAN-001 murmur.yaml:7:5: unknown key 'capabilities.network.allowed' is ignored; did you mean 'allow'?",
		"W-MAN-002 murmur.yaml:8:10: capabilities.state: state is declared per artifact (artifacts[].capabilities.state); at capsule level it opens nothing and is ignored",
		"W-MAN-001 murmur.yaml:12:5: unknown key 'artifacts[0].extra' is ignored",
		"W-MAN-001 murmur.yaml:16:46: unknown key 'artifacts[0].gateway.proxy' is ignored",
		"W-MAN-003 murmur.yaml:10:5: artifacts[0].deadline_seconds: only a hook's entry may set its own deadline; ignored for tool artifact a/b (use capabilities.limits.deadline_seconds)",
		"W-MAN-001 murmur.yaml:18:12: unknown key 'inference.driver.artifact_name' is ignored",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if m.Warnings[0].String() != "warning[W-MAN-001]: murmur.yaml:3:1: unknown key 'colour' is ignored" {
		t.Errorf("String() = %q", m.Warnings[0].String())
	}
	if len(m.StateStores()) != 0 {
		t.Errorf("a capsule-level state block must open nothing: %v", m.StateStores())
	}
}

func TestSecrets(t *testing.T) {
	src := head + "artifacts:\n  - name: a/drv\n    version: \"1\"\n    runtime: driver\n    gateway:\n      api_key: ${OPENAI_API_KEY}\n" +
		"  - name: a/lit\n    version: \"1\"\n    gateway:\n      api_key: plain-literal\n"
	const secret = "sk-very-secret-value"
	m, err := Parse([]byte(src), "", Options{LookupEnv: env(map[string]string{"OPENAI_API_KEY": secret})})
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Artifacts[0].Gateway; g.APIKey != secret || g.APIKeyRef != "${OPENAI_API_KEY}" {
		t.Errorf("resolved gateway %+v", g)
	}
	if m.Artifacts[0].Gateway.LiteralKey() || (*Gateway)(nil).LiteralKey() {
		t.Error("LiteralKey true for a reference or no gateway")
	}
	if g := m.Artifacts[1].Gateway; g.APIKey != "plain-literal" || g.APIKeyRef != "" || !g.LiteralKey() {
		t.Errorf("literal gateway %+v", g)
	}
	eg, ws := m.EffectiveGrants()
	if js := mustJSON(t, eg); strings.Contains(js, secret) || strings.Contains(js, "OPENAI") {
		t.Errorf("effective grants carry the secret: %s", js)
	}
	for _, w := range append(ws, m.Warnings...) {
		if strings.Contains(w.Message, secret) {
			t.Errorf("warning carries the secret: %s", w.Message)
		}
	}

	// SkipSecrets: nothing resolved, nothing looked up, no error when unset.
	looked := false
	m, err = Parse([]byte(src), "", Options{SkipSecrets: true, LookupEnv: func(string) (string, bool) { looked = true; return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if looked {
		t.Error("SkipSecrets still looked the variable up")
	}
	if g := m.Artifacts[0].Gateway; g.APIKey != "" || g.APIKeyRef != "${OPENAI_API_KEY}" {
		t.Errorf("skipped gateway %+v", g)
	}

	// A variable set to the empty string is set.
	if _, err := Parse([]byte(src), "", Options{LookupEnv: env(map[string]string{"OPENAI_API_KEY": ""})}); err != nil {
		t.Errorf("empty but set: %v", err)
	}

	// The zero Options read the process environment.
	t.Setenv("MURMUR_TEST_KEY_H1", "from-env")
	m, err = Parse([]byte(head+"artifacts:\n  - name: a/b\n    version: \"1\"\n    gateway: {api_key: \"${MURMUR_TEST_KEY_H1}\"}\n"), "", Options{})
	if err != nil || m.Artifacts[0].Gateway.APIKey != "from-env" {
		t.Errorf("os.LookupEnv default: %v %+v", err, m)
	}

	// A malformed reference never echoes the value.
	_, err = Parse([]byte(head+"artifacts:\n  - name: a/b\n    version: \"1\"\n    gateway: {api_key: \"sk-live-abc${\"}\n"), "", Options{})
	if diag.Code(err) != "E-MAN-021" || strings.Contains(err.Error(), "sk-live-abc") {
		t.Errorf("malformed reference: %v", err)
	}
	var d *diag.Diagnostic
	_, err = Parse([]byte(src), "", Options{LookupEnv: env(nil)})
	if !errors.As(err, &d) || d.Hint != "export OPENAI_API_KEY in the environment of the process that runs the capsule" {
		t.Errorf("unset variable: %v (hint %q)", err, d.Hint)
	}
}

func TestConfigIsJSONable(t *testing.T) {
	m := mustParse(t, head+`artifacts:
  - name: a/b
    version: "1"
    config:
      1: one
      nested: {2: two, list: [~, true, 1.5, 2001-12-14, 99999999999999999999, "s"]}
      empty:
`)
	got := mustJSON(t, m.Artifacts[0].Config)
	want := `{"1":"one","empty":null,"nested":{"2":"two","list":[null,true,1.5,"2001-12-14",100000000000000000000,"s"]}}`
	if got != want {
		t.Errorf("config JSON\n got %s\nwant %s", got, want)
	}
	if m.Declared("artifacts[0].config.nested") {
		t.Error("keys inside config are not manifest keys")
	}
}

func TestMergeKeys(t *testing.T) {
	m := mustParse(t, head+`x-defaults: &gw
  version: "9"
  gateway: {endpoint: "https://llm.example.com"}
x-extra: &extra
  runtime: driver
  version: "8"
artifacts:
  - <<: [*gw, *extra]
    name: a/one
  - <<: *gw
    name: a/two
    version: "2"
`)
	a, b := m.Artifacts[0], m.Artifacts[1]
	if a.Version != "9" || a.RuntimeKind() != RuntimeDriver || a.Gateway.Endpoint != "https://llm.example.com" {
		t.Errorf("merged artifact %+v", a)
	}
	if b.Version != "2" || b.RuntimeKind() != RuntimeTool || b.Gateway == nil {
		t.Errorf("explicit keys must win over merged ones: %+v", b)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("x- keys must not be warned about: %v", m.Warnings)
	}
	if m.PosOf("artifacts[0].version") != (Pos{4, 3}) {
		t.Errorf("a merged key is declared where the anchor wrote it: %v", m.PosOf("artifacts[0].version"))
	}
	for _, src := range []string{head + "capabilities:\n  <<: 5\n", head + "capabilities:\n  <<: [5]\n"} {
		if _, err := Parse([]byte(src), "", Options{}); diag.Code(err) != "E-MAN-004" {
			t.Errorf("bad merge value: %v", err)
		}
	}
}

func TestMessagesAreOneCleanLine(t *testing.T) {
	m := mustParse(t, head+"\"bad\\nkey\\e[31m\": 1\n\"\\xff\": 2\n")
	if len(m.Warnings) != 2 {
		t.Fatalf("warnings %v", m.Warnings)
	}
	if w := m.Warnings[0].Message; w != `murmur.yaml:3:1: unknown key 'bad\nkey\x1b[31m' is ignored` {
		t.Errorf("control characters not escaped: %q", w)
	}
	if w := m.Warnings[1].Message; w != `murmur.yaml:4:1: unknown key 'ÿ' is ignored` {
		t.Errorf("got %q", w)
	}
	_, err := Parse([]byte(head+"runtime: \"a\\tb\\u0085\"\n"), "", Options{})
	if err == nil || err.Error() != `error[E-MAN-007]: murmur.yaml:3:10: runtime: "a\tb\u0085" is not one of capsule, tool, driver, hook, skill, wasm, native` {
		t.Errorf("got %v", err)
	}
}

func TestSmallAccessors(t *testing.T) {
	m := mustParse(t, head+`capabilities:
  network: {unix_sockets: True}
  filesystem: {workdir_exec: FALSE}
inference:
  transport: process
  command: ./agent --serve
  max_tokens: 1000
  max_session_tokens: 50000
  system_prompt: be brief
`)
	if !m.Capabilities.Network.UnixSockets.V || m.Capabilities.Filesystem.WorkdirExec != Some(false) {
		t.Errorf("YAML boolean spellings: %+v %+v", m.Capabilities.Network, m.Capabilities.Filesystem)
	}
	in := m.Inference
	if in.TransportKind() != "process" || in.Command != "./agent --serve" || in.MaxTokens != Some(1000) ||
		in.MaxSessionTokens != Some(50000) || in.SystemPrompt != "be brief" {
		t.Errorf("inference %+v", in)
	}
	if _, ok := m.Trace.Retain.MaxAgeDuration(); ok {
		t.Error("undeclared max_age reads as declared")
	}
	w := Warning{Code: "W-MAN-001", Message: "m"}
	if d := w.Diag(); d.Code != "W-MAN-001" || d.Message != "m" || d.String() != w.String() {
		t.Errorf("Diag %+v", d)
	}
	if !ValidEnvName("A_1") || ValidEnvName("1A") || !ValidSegment("a-1") || ValidSegment("a_1") {
		t.Error("ValidEnvName / ValidSegment")
	}
	if Bare("local/x") != "x" || Bare("x") != "x" {
		t.Error("Bare")
	}
}

// The tools: map: each key resolves to the tool it names (a bare name to
// the one artifact that has it), in the order written.
func TestToolSettings(t *testing.T) {
	m, err := Parse([]byte("name: x\nversion: \"1\"\ninference: {model: m}\nartifacts:\n  - {name: acme/deploy, version: \"1\"}\n  - {name: acme/notes, version: \"1\", runtime: skill}\n"+
		"capabilities:\n  shell: {allow: [python3.11]}\n  spawn: {allow: [local/w]}\n"+
		"tools:\n  deploy: {approval: required}\n  python3.11: {approval: required}\n  delegate-task: {approval: none}\n  acme/notes: {}\n"), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range m.Tools {
		got = append(got, s.Key+"="+s.Tool+":"+s.Approval.Or("-"))
	}
	if want := "deploy=acme/deploy:required python3.11=python3.11:required delegate-task=delegate-task:none acme/notes=acme/notes:-"; strings.Join(got, " ") != want {
		t.Errorf("tools %v\nwant %s", got, want)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings %+v", m.Warnings)
	}
}
