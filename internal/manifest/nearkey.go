package manifest

import (
	"sort"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
)

// knownKeys lists the keys each mapping of a manifest takes, by the
// mapping's path with list indices dropped ("artifacts[].gateway"). It is
// the parser's key table: a key not listed here is an unknown key
// (W-MAN-001) whatever the walkers' switches say, so the table is what the
// parser takes; TestKnownKeysParse checks that every key listed is one a
// walker reads, and docs/manifest.md is tested against Keys.
var knownKeys = map[string][]string{
	"": {"name", "version", "runtime", "implementation", "execution", "description", "tags",
		"input_schema", "requires_files", "artifacts", "capabilities", "inference", "lifecycle", "tools", "observability", "trace",
		"network", "exports"},
	"tools[]":             {"approval"},
	"exports":             {"peer_files", "peer_tasks"},
	"exports.peer_files":  {"root", "max_ttl", "max_bytes"},
	"observability":       {"otel_endpoint"},
	"trace":               {"retain"},
	"trace.retain":        {"max_sessions", "max_age"},
	"lifecycle":           {"task_acceptance", "after_task", "queue_depth", "delegation_deadline_secs", "input_timeout_secs"},
	"inference":           {"transport", "model", "driver", "command", "max_turns", "max_tokens", "max_session_tokens", "system_prompt", "system_prompt_file"},
	"inference.driver":    {"artifact"},
	"artifacts[]":         {"name", "version", "runtime", "gateway", "capabilities", "config", "deadline_seconds", "mcp"},
	"artifacts[].gateway": {"endpoint", "api_key"},
	"artifacts[].mcp":     {"command", "args", "env", "url", "headers", "tools", "start_seconds", "install_dirs"},
	"capabilities": {"network", "peer_fetch", "shell", "env", "spawn", "filesystem", "install",
		"containment", "limits", "resources", "state", "plan"},
	"capabilities.plan":       {"submit"},
	"capabilities.network":    {"allow", "unix_sockets"},
	"capabilities.peer_fetch": {"allow"},
	"capabilities.shell":      {"allow"},
	"capabilities.env":        {"allow"},
	"capabilities.spawn":      {"allow", "workdir_snapshot"},
	"capabilities.filesystem": {"scope", "workdir_exec"},
	"capabilities.install":    {"skill", "tool"},
	"capabilities.limits":     {"deadline_seconds", "memory_bytes", "table_elements", "instances"},
	"capabilities.resources": {"workdir_max_bytes", "max_processes", "max_open_files", "max_file_size_bytes",
		"cpu_seconds", "memory_bytes", "cgroup_memory_bytes", "cgroup_pids_max", "state_max_bytes"},
	"capabilities.state": {"store"},

	// An agent's door (docs/formations.md).
	"network":                {"authentication"},
	"network.authentication": {"scheme"},
	"exports.peer_tasks":     {"accept"},
}

// tablePath is the knownKeys entry for the mapping at path: list indices
// dropped, and an artifact's own capabilities read as the capsule's.
func tablePath(path string) string {
	p := dropIndices(path)
	if strings.HasPrefix(p, "tools.") {
		return "tools[]" // keyed by tool names, which may hold dots
	}
	if rest, ok := strings.CutPrefix(p, "artifacts[]."); ok && strings.HasPrefix(rest, "capabilities") {
		return rest
	}
	return p
}

// known reports whether the mapping at path takes key.
func known(path, key string) bool {
	for _, k := range knownKeys[tablePath(path)] {
		if k == key {
			return true
		}
	}
	return false
}

// Keys lists every key a manifest may hold, as dotted paths from the top
// ("capabilities.network.allow"; "artifacts[].name" for a list's entries),
// sorted. An artifact's capabilities block takes the keys of the capsule's
// (artifacts[].capabilities.* is not listed again).
func Keys() []string {
	var out []string
	for parent, keys := range knownKeys {
		for _, k := range keys {
			if parent == "" {
				out = append(out, k)
			} else {
				out = append(out, parent+"."+k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// nearKeys returns the keys the mapping at parent takes that are within two
// edits of key (one for a key of three letters or fewer), closest first.
func nearKeys(parent, key string) []string {
	p := tablePath(parent)
	limit := 2
	if len(key) <= 3 {
		limit = 1
	}
	var out []string
	for d := 1; d <= limit; d++ {
		for _, k := range knownKeys[p] {
			if diag.EditDistance(key, k) == d {
				out = append(out, k)
			}
		}
	}
	return out
}

// dropIndices turns "artifacts[3].gateway" into "artifacts[].gateway".
func dropIndices(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		b.WriteByte(path[i])
		if path[i] == '[' {
			for i+1 < len(path) && path[i+1] >= '0' && path[i+1] <= '9' {
				i++
			}
		}
	}
	return b.String()
}
