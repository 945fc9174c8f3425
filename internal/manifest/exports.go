package manifest

import (
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults and bounds of exports.peer_files.
const (
	DefaultPeerMaxTTL   = 15 * time.Minute
	MinPeerTTL          = time.Second
	MaxPeerTTL          = time.Hour
	DefaultPeerMaxBytes = int64(10 << 20)
)

// PeerFiles is exports.peer_files: the folder of the work folder an agent
// shares single files from, by handle (docs/peer-files.md).
type PeerFiles struct {
	Root     string // cleaned, relative, inside the work folder
	MaxTTL   Opt[time.Duration]
	MaxBytes Opt[int64]
}

// TTL is max_ttl with its default.
func (f *PeerFiles) TTL() time.Duration { return f.MaxTTL.Or(DefaultPeerMaxTTL) }

// Bytes is max_bytes with its default.
func (f *PeerFiles) Bytes() int64 { return f.MaxBytes.Or(DefaultPeerMaxBytes) }

// Exports is the exports: block.
type Exports struct {
	// PeerFiles is nil when not declared.
	PeerFiles *PeerFiles
	// peerFilesPos is where exports.peer_files was written (W-MAN-004).
	peerFilesPos *yaml.Node
}

// ParsePeerTTL reads a TTL: a Go duration ("90s", "15m") or whole seconds.
func ParsePeerTTL(s string) (time.Duration, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 || n > 1<<32 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// exports reads the exports: block (the part of it this file knows).
func (p *parser) exports(n *yaml.Node, kp string) {
	p.mapping(n, kp, func(k string, v *yaml.Node, kp string) bool {
		if k == "peer_tasks" {
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				if k != "accept" {
					return false
				}
				p.m.Door.PeerTasksAccept = p.boolean(v, kp)
				return true
			})
			return true
		}
		if k != "peer_files" {
			return false
		}
		f := &PeerFiles{}
		p.m.Exports.PeerFiles, p.m.Exports.peerFilesPos = f, deref(v)
		rootSeen := false
		p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
			switch k {
			case "root":
				rootSeen = true
				s := p.str(v, kp)
				if p.err != nil {
					return true
				}
				c := path.Clean(s)
				if s == "" || strings.HasPrefix(s, "/") || c == ".." || strings.HasPrefix(c, "../") {
					p.fail(deref(v), "E-MAN-030", "%s: %s is not a folder inside the work folder (it must be relative and stay inside after cleaning)", kp, strconv.Quote(s)).
						WithHint("name a folder of the work folder, such as root: share")
					return true
				}
				f.Root = c
			case "max_ttl":
				s := p.str(v, kp)
				if p.err != nil {
					return true
				}
				d, ok := ParsePeerTTL(s)
				if !ok || d < MinPeerTTL || d > MaxPeerTTL {
					p.fail(deref(v), "E-MAN-031", "%s: %s is not a duration from 1s to 1h", kp, strconv.Quote(s)).
						WithHint(`write a Go duration such as "15m", or whole seconds such as 900`)
					return true
				}
				f.MaxTTL = Some(d)
			case "max_bytes":
				f.MaxBytes = p.optInt64(v, kp)
			default:
				return false
			}
			return true
		})
		if p.err == nil && !rootSeen {
			p.fail(deref(v), "E-MAN-030", "%s: root is missing: exports.peer_files needs the folder it shares from", kp).
				WithHint("add root: share (a folder of the work folder)")
		}
		return true
	})
}

// exportsChecks warns about exports that have no effect on this capsule:
// a script capsule has no door, so no peer files (W-MAN-004).
func (p *parser) exportsChecks() {
	if n := p.m.Exports.peerFilesPos; n != nil && p.m.RuntimeKind() == RuntimeCapsule && !p.m.IsAgent() {
		p.warn(n, "W-MAN-004", "exports.peer_files: a script capsule has no door and no agent loop, so it shares no files; the key has no effect")
	}
}
