package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestManifestDocListsEveryKey: docs/manifest.md has one row per key of the
// parser's key table (Keys), no more and no fewer; each row names its type,
// default, meaning and refusing codes, every code is documented, and the
// manifest's own codes are ones this package emits. Built-in defaults the
// page states are this package's constants.
func TestManifestDocListsEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "manifest.md"))
	if err != nil {
		t.Fatal(err)
	}
	diagDoc, err := os.ReadFile(filepath.Join("..", "..", "docs", "diagnostics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			b, _ := os.ReadFile(f)
			src.Write(b)
		}
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	code := regexp.MustCompile(`[EW]-[A-Z]+-\d{3}`)
	rows := map[string][]string{}
	for _, l := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs/manifest.md lists %s twice", m[1])
		}
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) != 5 {
			t.Errorf("%s: %d cells, want key | type | default | meaning | refused with", m[1], len(cells))
			continue
		}
		rows[m[1]] = cells
		codes := code.FindAllString(cells[4], -1)
		if len(codes) == 0 {
			t.Errorf("%s: no code refuses it", m[1])
		}
		for _, c := range codes {
			if !strings.Contains(string(diagDoc), "| "+c+" |") {
				t.Errorf("%s: %s is not in docs/diagnostics.md", m[1], c)
			}
			if (strings.HasPrefix(c, "E-MAN-") || strings.HasPrefix(c, "W-MAN-")) && !strings.Contains(src.String(), `"`+c+`"`) {
				t.Errorf("%s: %s is not emitted by internal/manifest", m[1], c)
			}
		}
	}
	keys := Keys()
	for _, k := range keys {
		if _, ok := rows[k]; !ok {
			t.Errorf("the parser takes %s, which docs/manifest.md does not list", k)
		}
	}
	for k := range rows {
		if i := sort.SearchStrings(keys, k); i == len(keys) || keys[i] != k {
			t.Errorf("docs/manifest.md lists %s, which the parser does not take", k)
		}
	}
	if len(keys) < 60 {
		t.Fatalf("Keys() lists only %d keys: the table is broken", len(keys))
	}
	for k, def := range map[string]int64{
		"capabilities.limits.deadline_seconds":       DefaultDeadlineSeconds,
		"capabilities.limits.memory_bytes":           DefaultMemoryBytes,
		"capabilities.limits.table_elements":         DefaultTableElements,
		"capabilities.limits.instances":              DefaultInstances,
		"capabilities.resources.workdir_max_bytes":   DefaultWorkdirMaxBytes,
		"capabilities.resources.max_processes":       DefaultMaxProcesses,
		"capabilities.resources.max_open_files":      DefaultMaxOpenFiles,
		"capabilities.resources.max_file_size_bytes": DefaultMaxFileSizeBytes,
		"capabilities.resources.cpu_seconds":         DefaultCPUSeconds,
		"capabilities.resources.memory_bytes":        DefaultCommandMemory,
		"capabilities.resources.cgroup_memory_bytes": DefaultCgroupMemoryBytes,
		"capabilities.resources.cgroup_pids_max":     DefaultCgroupPidsMax,
		"inference.max_turns":                        DefaultMaxTurns,
		"inference.max_tokens":                       DefaultMaxTokens,
		"lifecycle.queue_depth":                      DefaultQueueDepth,
		"lifecycle.delegation_deadline_secs":         DefaultDelegationDeadline,
		"artifacts[].deadline_seconds":               DefaultHookDeadlineSecond,
	} {
		if c, ok := rows[k]; ok && !regexp.MustCompile(`(^|\D)`+fmt.Sprint(def)+`(\D|$)`).MatchString(c[2]) {
			t.Errorf("%s: docs/manifest.md's default %q is not the built-in %d", k, c[2], def)
		}
	}
}

// TestKeyTableGatesTheParser: a key the walkers would read but the table
// does not list is an unknown key, so the table (and the page tested
// against it) is what the parser takes.
func TestKeyTableGatesTheParser(t *testing.T) {
	saved := knownKeys["lifecycle"]
	knownKeys["lifecycle"] = []string{"task_acceptance", "after_task", "queue_depth"}
	defer func() { knownKeys["lifecycle"] = saved }()
	m, err := Parse([]byte("name: a\nversion: \"1\"\nlifecycle:\n  delegation_deadline_secs: 5\n"), "murmur.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Lifecycle.DelegationDeadlineSecs.Set || len(m.Warnings) != 1 || m.Warnings[0].Code != "W-MAN-001" {
		t.Fatalf("a key out of the table was read: %+v %+v", m.Lifecycle, m.Warnings)
	}
}
