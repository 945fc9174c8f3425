package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
)

// writeTree writes files (relative path -> content) under a new temp dir.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const agentYAML = `name: hello
version: "0.1.0"
requires_files: [prompt.md]
artifacts:
  - name: murmur/driver-anthropic
    version: "0.19.0"
    runtime: driver
    gateway:
      endpoint: https://api.anthropic.com
      api_key: ${ANTHROPIC_API_KEY}
inference:
  model: m
  driver:
    artifact: murmur/driver-anthropic
`

// mcpHTTP is an artifacts[] entry of an HTTP MCP server with one header.
func mcpHTTP(header string) string {
	return "  - name: acme/docs\n    version: \"1\"\n    runtime: mcp\n    mcp:\n      url: https://docs.example.com/mcp\n      headers: {" + header + "}\n      tools: [search]\n"
}

func TestPackKinds(t *testing.T) {
	comp := string(wasmComponentHeader) + "component body"
	core := string(wasmCoreHeader) + "core body"
	tests := []struct {
		name    string
		files   map[string]string
		code    string
		entries string // sorted, comma-separated
	}{
		{name: "agent capsule is manifest-only", files: map[string]string{"murmur.yaml": agentYAML, "prompt.md": "hi", "stray.wasm": comp, "notes.txt": "x"},
			entries: "murmur.yaml,prompt.md"},
		{name: "script capsule", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": comp, "other.txt": "x"},
			entries: "capsule.wasm,murmur.yaml"},
		{name: "capsule.wasm preferred", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": comp, "helper.wasm": core},
			entries: "capsule.wasm,murmur.yaml"},
		{name: "tool with its one wasm and requires_files", files: map[string]string{"murmur.yaml": "name: t\nversion: 1.0.0\nruntime: tool\nrequires_files: [data/words.txt]\n", "lint.wasm": comp, "data/words.txt": "a b"},
			entries: "data/words.txt,lint.wasm,murmur.yaml"},
		{name: "skill", files: map[string]string{"murmur.yaml": "name: k\nversion: 1.0.0\nruntime: skill\n", "skill.md": "# skill"},
			entries: "murmur.yaml,skill.md"},
		{name: "no manifest", files: map[string]string{"capsule.wasm": comp}, code: "E-BLD-001"},
		{name: "bad manifest", files: map[string]string{"murmur.yaml": "name: [\n"}, code: "E-MAN"},
		{name: "literal secret", files: map[string]string{"murmur.yaml": strings.Replace(agentYAML, "${ANTHROPIC_API_KEY}", "sk-ant-123", 1), "prompt.md": "hi"}, code: "E-BLD-002"},
		{name: "literal secret header", files: map[string]string{"murmur.yaml": agentYAML[:strings.Index(agentYAML, "inference:")] + mcpHTTP("X-Api-Key: sk-123") + agentYAML[strings.Index(agentYAML, "inference:"):], "prompt.md": "hi"}, code: "E-BLD-002"},
		{name: "secret header by reference", files: map[string]string{"murmur.yaml": agentYAML[:strings.Index(agentYAML, "inference:")] + mcpHTTP(`Authorization: "Bearer ${DOCS}"`) + agentYAML[strings.Index(agentYAML, "inference:"):], "prompt.md": "hi"},
			entries: "murmur.yaml,prompt.md"},
		{name: "literal header that is no secret", files: map[string]string{"murmur.yaml": agentYAML[:strings.Index(agentYAML, "inference:")] + mcpHTTP("X-Team: blue") + agentYAML[strings.Index(agentYAML, "inference:"):], "prompt.md": "hi"},
			entries: "murmur.yaml,prompt.md"},
		{name: "core module", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": core}, code: "E-BLD-003"},
		{name: "not wasm", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": "#!/bin/sh\necho hi\n"}, code: "E-BLD-004"},
		{name: "short wasm", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": "\x00asm"}, code: "E-BLD-004"},
		{name: "empty wasm", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": ""}, code: "E-BLD-004"},
		{name: "script capsule without wasm", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n"}, code: "E-BLD-005"},
		{name: "hook without wasm", files: map[string]string{"murmur.yaml": "name: h\nversion: 1.0.0\nruntime: hook\n"}, code: "E-BLD-005"},
		{name: "skill without skill.md", files: map[string]string{"murmur.yaml": "name: k\nversion: 1.0.0\nruntime: skill\n"}, code: "E-BLD-006"},
		{name: "several wasm, no capsule.wasm", files: map[string]string{"murmur.yaml": "name: t\nversion: 1.0.0\nruntime: tool\n", "a.wasm": comp, "b.wasm": comp}, code: "E-BLD-008"},
		{name: "requires_files missing", files: map[string]string{"murmur.yaml": agentYAML}, code: "E-BLD-007"},
		{name: "requires_files directory", files: map[string]string{"murmur.yaml": agentYAML, "prompt.md/x": "x"}, code: "E-BLD-007"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			b, err := Pack(dir)
			if tc.code != "" {
				if !strings.HasPrefix(diag.Code(err), tc.code) {
					t.Fatalf("Pack = %v, want code %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("Pack: %v", err)
			}
			a, err := OpenArchive(b.Zip)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(a.Names(), ","); got != tc.entries {
				t.Fatalf("entries %s, want %s", got, tc.entries)
			}
			for _, n := range a.Names() {
				want, _ := os.ReadFile(filepath.Join(dir, n))
				got, _ := a.ReadFile(n)
				if !bytes.Equal(got, want) {
					t.Errorf("%s packed with other bytes", n)
				}
			}
			if b.SHA256 != HashHex(b.Zip) || b.FileName != strings.TrimPrefix(b.Manifest.Name, "local/")+"-"+b.Manifest.Version+".mur.zip" {
				t.Errorf("built %s %s", b.SHA256, b.FileName)
			}
		})
	}
}

func TestPackRequiresFilesEscape(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.txt": "s"})
	dir := writeTree(t, map[string]string{"murmur.yaml": agentYAML})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "prompt.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := Pack(dir); diag.Code(err) != "E-BLD-007" {
		t.Fatalf("symlink out of the directory: %v", err)
	}
	// A symlink that stays inside is packed as the file it names.
	os.Remove(filepath.Join(dir, "prompt.md"))
	os.WriteFile(filepath.Join(dir, "real.md"), []byte("inside"), 0o644)
	os.Symlink("real.md", filepath.Join(dir, "prompt.md"))
	b, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := OpenArchive(b.Zip)
	if got, _ := a.ReadFile("prompt.md"); string(got) != "inside" {
		t.Fatalf("prompt.md = %q", got)
	}
}

func TestPackDeterministic(t *testing.T) {
	comp := string(wasmComponentHeader) + strings.Repeat("x", 10000)
	files := map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\nrequires_files: [b.txt, a.txt]\n", "capsule.wasm": comp, "a.txt": "a", "b.txt": "b"}
	d1, d2 := writeTree(t, files), writeTree(t, files)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, p := range []string{"a.txt", "capsule.wasm"} {
		os.Chtimes(filepath.Join(d2, p), old, old)
		os.Chmod(filepath.Join(d2, p), 0o600)
	}
	b1, err := Pack(d1)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := Pack(d2)
	if err != nil {
		t.Fatal(err)
	}
	if b1.SHA256 != b2.SHA256 {
		t.Fatal("same inputs, different hashes")
	}
	os.WriteFile(filepath.Join(d2, "b.txt"), []byte("B"), 0o644)
	if b3, _ := Pack(d2); b3.SHA256 == b1.SHA256 {
		t.Fatal("different inputs, same hash")
	}
}

func TestPackCeiling(t *testing.T) {
	t.Setenv(MaxDecompressedEnv, "1000")
	dir := writeTree(t, map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": string(wasmComponentHeader) + strings.Repeat("x", 2000)})
	if _, err := Pack(dir); diag.Code(err) != "E-BLD-009" {
		t.Fatalf("Pack past the ceiling: %v", err)
	}
}

func TestPackSymlinkedPayload(t *testing.T) {
	outside := writeTree(t, map[string]string{"c.wasm": string(wasmComponentHeader) + "outside"})
	dir := writeTree(t, map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "build/out.wasm": string(wasmComponentHeader) + "inside"})
	os.Symlink("build/out.wasm", filepath.Join(dir, "capsule.wasm"))
	b, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := OpenArchive(b.Zip)
	if got, _ := a.ReadFile("capsule.wasm"); !bytes.HasSuffix(got, []byte("inside")) {
		t.Fatalf("capsule.wasm = %q", got)
	}
	os.Remove(filepath.Join(dir, "capsule.wasm"))
	os.Symlink(filepath.Join(outside, "c.wasm"), filepath.Join(dir, "capsule.wasm"))
	if _, err := Pack(dir); diag.Code(err) != "E-BLD-007" {
		t.Fatalf("payload symlinked out of the directory: %v", err)
	}
}
