package delegate

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/launch/launchapi"
)

// The formation variables. Formations themselves (mur run --roster, the
// channel's tokens, call-member) are not built yet; what is built is what
// every launch checks, so a value that would mislead a member is refused
// here rather than ignored.
const (
	EnvFormationChannel  = "MURMUR_FORMATION_CHANNEL"
	EnvFormationPeers    = "MURMUR_FORMATION_PEERS"
	EnvFormationLifeline = "MURMUR_FORMATION_LIFELINE"
)

var formationIDRE = regexp.MustCompile(`^frm_[0-9a-f]{32}$`)

// ReadFormation checks the formation variables of mur run's own
// environment before any session exists and returns the formation the
// session belongs to ("" for none: unset or blank). A MURMUR_FORMATION_ID
// that is not frm_ and 32 lowercase hex digits is E-RUN-044. E-RUN-046:
// MURMUR_FORMATION_PEERS set at all (it is handed to a member's components
// only); a MURMUR_FORMATION_CHANNEL that is not a readable descriptor; a
// MURMUR_FORMATION_LIFELINE (blank is absent) set without a formation id or
// naming anything but an open pipe's read end numbered 3 or above. The
// channel and lifeline descriptors are marked close-on-exec: they are never
// handed to a command, a tool or a delegated child.
func ReadFormation(lookup func(string) (string, bool)) (string, error) {
	id, _ := lookup(EnvFormationID)
	id = strings.TrimSpace(id)
	if id != "" && !formationIDRE.MatchString(id) {
		return "", diag.New("E-RUN-044", "%s=%q is not a formation id: it must be frm_ followed by 32 lowercase hex digits", EnvFormationID, id).
			WithHint("unset it; a formation's members get it from mur run --roster")
	}
	bad := func(name, v, why string) error {
		return diag.New("E-RUN-046", "%s=%s refuses this launch: %s", name, v, why).
			WithHint("it is set by mur run --roster only; unset it")
	}
	if v, ok := lookup(EnvFormationPeers); ok && v != "" {
		return "", bad(EnvFormationPeers, v, "it is handed to a formation member's components, never set in mur run's own environment")
	}
	if v, _ := lookup(EnvFormationChannel); strings.TrimSpace(v) != "" {
		v = strings.TrimSpace(v)
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 0 {
			return "", bad(EnvFormationChannel, v, "it must name an inherited descriptor")
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return "", bad(EnvFormationChannel, v, "the descriptor is not open")
		}
		if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
			return "", bad(EnvFormationChannel, v, "the descriptor cannot be read")
		}
		if fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
	if v, _ := lookup(EnvFormationLifeline); strings.TrimSpace(v) != "" {
		v = strings.TrimSpace(v)
		if id == "" {
			return "", bad(EnvFormationLifeline, v, EnvFormationID+" is not set")
		}
		fd, why := launchapi.PipeReadEnd(v)
		if why != "" {
			return "", bad(EnvFormationLifeline, v, why)
		}
		syscall.CloseOnExec(fd)
	}
	return id, nil
}
