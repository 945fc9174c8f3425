package contain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/murmur-go/murmur/internal/atomicfile"
	"github.com/murmur-go/murmur/internal/version"
)

// probeCacheFormat changes whenever Report's meaning changes, so an answer
// written by another shape of the probe is never read.
const probeCacheFormat = "murmur-host-probe-v1"

type probeCacheFile struct {
	Key    string  `json:"key"`
	Report *Report `json:"report"`
}

// ProbeCached is Probe answered, where it can be, from file: the report a
// probe wrote there on this very host state (hostKey: the kernel and its
// boot, this process's user, capabilities, seccomp state and namespaces,
// the sysctls and security modules that decide what the probe finds, and
// this build of Murmur). One probe per host per boot instead of two child
// processes per launch.
//
// Only a report of a host that delivers every mechanism is cached. A stale
// positive answer cannot weaken a tier: the mechanism it promised is
// applied when a command starts, and fails that command, not silently. A
// cached negative answer could (a host that gained namespaces would keep
// running commands a tier lower), so negatives are probed every time. A
// missing, unreadable or mismatched file is ignored; a write that fails
// costs only the next launch's probe. file "" is Probe.
func ProbeCached(file string) *Report {
	probeOnce.Do(func() { probed = probeCachedUncached(file) })
	return probed
}

// probeCachedUncached is ProbeCached without the once per process.
func probeCachedUncached(file string) *Report {
	if file == "" {
		return probe()
	}
	key := hostKey()
	if key == "" {
		return probe()
	}
	if b, err := os.ReadFile(file); err == nil {
		var c probeCacheFile
		if json.Unmarshal(b, &c) == nil && c.Key == key && c.Report != nil && cacheable(c.Report) {
			return c.Report
		}
	}
	r := probe()
	if cacheable(r) {
		if b, err := json.Marshal(probeCacheFile{Key: key, Report: r}); err == nil {
			if os.MkdirAll(filepath.Dir(file), 0o700) == nil {
				_ = atomicfile.Write(file, b, 0o600)
			}
		}
	}
	return r
}

// cacheable: a report that misses nothing, the only kind kept.
func cacheable(r *Report) bool {
	return r.OS != "" && r.Lacks(Sealed) == "" && r.NetNS
}

// hostKey digests hostFacts, or is "" where there are none to key on.
func hostKey() string {
	facts := hostFacts()
	if len(facts) == 0 {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(probeCacheFormat + "\x00" + version.Version + " " + version.Revision() + "\x00"))
	for _, f := range facts {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
