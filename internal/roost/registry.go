package roost

import "github.com/murmur-go/murmur/internal/manifest"

// Artifact is one capsule resolved from the daemon's registry: its
// coordinates, the SHA-256 of the .mur.zip bytes read on this resolve, and the
// manifest parsed from those same bytes (gateway keys left unresolved).
type Artifact struct {
	Name, Version, SHA256 string
	Manifest              *manifest.Manifest
}

// Registry resolves capsules by name and version. The daemon's is the
// artifact store at --registry-path (storeRegistry); the interface is what the
// server needs and nothing more.
type Registry interface {
	Resolve(name, version string) (Artifact, error)
}
