package manifest

import (
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
)

// knownKeys lists the keys each mapping of a manifest takes, by the
// mapping's path with list indices dropped ("artifacts[].gateway"). It
// serves only the "did you mean" of an unknown key's W-MAN-001 warning, so
// a key missing here costs a suggestion, never a parse; TestKnownKeysParse
// checks that every key listed is one the parser takes.
var knownKeys = map[string][]string{
	"": {"name", "version", "runtime", "implementation", "execution", "description", "tags",
		"input_schema", "requires_files", "artifacts", "capabilities", "inference", "lifecycle", "observability", "trace"},
	"observability":       {"otel_endpoint"},
	"trace":               {"retain"},
	"trace.retain":        {"max_sessions", "max_age"},
	"lifecycle":           {"task_acceptance", "after_task", "queue_depth", "delegation_deadline_secs"},
	"inference":           {"transport", "model", "driver", "command", "max_turns", "max_tokens", "max_session_tokens", "system_prompt", "system_prompt_file"},
	"inference.driver":    {"artifact"},
	"artifacts[]":         {"name", "version", "runtime", "gateway", "capabilities", "config", "deadline_seconds"},
	"artifacts[].gateway": {"endpoint", "api_key"},
	"capabilities": {"network", "peer_fetch", "shell", "env", "spawn", "filesystem", "install",
		"containment", "limits", "resources", "state"},
	"capabilities.network":    {"allow", "unix_sockets"},
	"capabilities.peer_fetch": {"allow"},
	"capabilities.shell":      {"allow"},
	"capabilities.env":        {"allow"},
	"capabilities.spawn":      {"allow", "workdir_snapshot"},
	"capabilities.filesystem": {"scope", "workdir_exec"},
	"capabilities.install":    {"skill", "tool"},
	"capabilities.limits":     {"deadline_seconds", "memory_bytes", "table_elements", "instances"},
	"capabilities.resources": {"workdir_max_bytes", "max_processes", "max_open_files", "max_file_size_bytes",
		"cpu_seconds", "memory_bytes", "cgroup_memory_bytes", "cgroup_pids_max"},
	"capabilities.state": {"store"},
}

// nearKeys returns the keys the mapping at parent takes that are within two
// edits of key (one for a key of three letters or fewer), closest first.
func nearKeys(parent, key string) []string {
	p := dropIndices(parent)
	if rest, ok := strings.CutPrefix(p, "artifacts[]."); ok && strings.HasPrefix(rest, "capabilities") {
		p = rest // an artifact's own capabilities have the capsule's shape
	}
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
