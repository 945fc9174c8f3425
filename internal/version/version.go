// Package version is the one place Murmur's version is written, shared by mur
// and mur-roost (they ship together at the same version).
package version

import "runtime/debug"

// Version of mur and mur-roost.
const Version = "0.1.0"

// Revision is the VCS revision this binary was built from ("+modified" for a
// dirty tree), else the module version, else "devel". Helper binaries that
// must come from the same build as mur (mur-contain, mur-driver) put it in
// their protocol stamps.
func Revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	var rev, mod string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			mod = s.Value
		}
	}
	switch {
	case rev != "" && mod == "true":
		return rev + "+modified"
	case rev != "":
		return rev
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return bi.Main.Version
	}
	return "devel"
}
