package contain

// StampLogEnv makes the test binary, run with --version, answer as
// mur-contain and append a line to the file it names (main_test.go).
const StampLogEnv = "CONTAIN_TEST_STAMP_LOG"

// UseHelper makes path the init helper binary for the rest of the test
// process ("" restores re-executing the test binary).
func UseHelper(path string) { helperPath = path }

// HelperPath is the binary commands start as.
func HelperPath() string { return helper() }

// FindHelper is the path findHelper pinned, or "".
func FindHelper(exe string) string {
	if p := findHelper(exe); p != nil {
		return p.Name()
	}
	return ""
}

// CgroupBases are the directories this process makes command cgroups in.
func CgroupBases() []string {
	h := cgroups()
	var out []string
	for _, d := range []string{h.v2, h.memV1, h.pidsV1} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// ProbeFile is ProbeCached's work without the once per process: each call
// reads or writes file afresh.
func ProbeFile(file string) *Report { return probeCachedUncached(file) }

// HostKey is the key a cached probe answer must carry on this host.
func HostKey() string { return hostKey() }
