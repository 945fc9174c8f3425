package contain

import (
	"runtime/debug"
	"strconv"
)

// HelperName is the lean helper binary mur looks for beside itself
// (cmd/mur-contain): the same init helper, without the rest of mur to
// start.
const HelperName = "mur-contain"

// helperProtocol numbers the job's shape; change it with the job.
const helperProtocol = 1

// HelperStamp identifies this build's helper protocol: a helper binary is
// used only when its --version says exactly the stamp of the running mur.
func HelperStamp() string {
	rev := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var r, mod string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				r = s.Value
			case "vcs.modified":
				mod = s.Value
			}
		}
		if r != "" {
			rev = r
			if mod == "true" {
				rev += "+modified"
			}
		} else if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			rev = bi.Main.Version
		}
	}
	return "protocol " + strconv.Itoa(helperProtocol) + " " + rev
}
