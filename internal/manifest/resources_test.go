package manifest

import (
	"strings"
	"testing"
)

// TestCommandResources: capabilities.resources.* are parsed (not unknown
// keys), declared values replace the defaults key by key, and a value that
// is not a positive integer is refused.
func TestCommandResources(t *testing.T) {
	def := mustParse(t, "name: a\nversion: 1.0.0\n").Capabilities.CommandResources()
	want := CommandResources{MaxProcesses: 128, MaxOpenFiles: 1024, MaxFileSizeBytes: 4 << 30, CPUSeconds: 3600,
		MemoryBytes: 2 << 30, CgroupMemoryBytes: 4 << 30, CgroupPidsMax: 256}
	if def != want {
		t.Fatalf("defaults %+v, want %+v", def, want)
	}
	m := mustParse(t, "name: a\nversion: 1.0.0\ncapabilities:\n  resources:\n    max_processes: 16\n    memory_bytes: 1048576\n    cgroup_pids_max: 32\n")
	if len(m.Warnings) != 0 {
		t.Fatalf("warnings: %v", m.Warnings)
	}
	got := m.Capabilities.CommandResources()
	want.MaxProcesses, want.MemoryBytes, want.CgroupPidsMax = 16, 1<<20, 32
	if got != want {
		t.Fatalf("declared %+v, want %+v", got, want)
	}
	_, err := Parse([]byte("name: a\nversion: 1.0.0\ncapabilities:\n  resources:\n    max_open_files: -1\n"), "", Options{LookupEnv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "capabilities.resources.max_open_files") {
		t.Fatalf("a negative value: %v", err)
	}
}
