// Package version is the one place Murmur's version is written, shared by mur
// and mur-roost (they ship together at the same version).
package version

// Version of mur and mur-roost.
const Version = "0.1.0"
