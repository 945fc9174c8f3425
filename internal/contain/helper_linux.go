package contain

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/murmur-go/murmur/internal/command"
)

var (
	helperOnce   sync.Once
	verifyOnce   sync.Once
	helperPath   string          // set by a test: run this path
	helperOpened *command.Pinned // mur-contain beside mur, opened by PinHelper; not yet verified
	helperPinned *command.Pinned // helperOpened once its stamp is verified; nil: re-execute this binary
	executable   = os.Executable // where mur-contain is looked for beside (a test's stand-in)
)

// PinHelper opens mur-contain beside this executable once: every command's
// helper is then that file run by its descriptor (command.Pinned), so a
// mur-contain replaced on disk after the runtime started is never run. The
// runtime calls it at start; the first helper call makes it otherwise.
//
// Its stamp (its --version, asked of the pinned file) is checked when the
// first command needs the helper, not here: the check starts a process,
// which a run with no native command (a script capsule's warm run: issue
// 31) would pay for nothing. The answer is the same either way: the file
// asked is the pinned one, and one changed in place since it was pinned is
// not run (Pinned.Path fails; this binary is run instead).
func PinHelper() {
	helperOnce.Do(func() {
		if helperPath != "" {
			return // set by a test
		}
		if exe, err := executable(); err == nil {
			helperOpened = openHelper(exe)
		}
	})
}

// helper is the binary the init helper runs as: the pinned mur-contain,
// else this binary (/proc/self/exe, the running file itself). A pinned
// helper changed in place since is not run: this binary is.
func helper() string {
	PinHelper()
	if helperPath != "" {
		return helperPath
	}
	verifyOnce.Do(func() {
		if helperOpened != nil && stamped(helperOpened) {
			helperPinned = helperOpened
		}
	})
	if helperPinned != nil {
		if p, err := helperPinned.Path(); err == nil {
			return p
		}
	}
	self, _ := selfExe()
	return self
}

// findHelper is mur-contain beside exe, pinned, when its --version (asked
// of the pinned file) is exactly this build's stamp, else nil.
func findHelper(exe string) *command.Pinned {
	if pin := openHelper(exe); pin != nil && stamped(pin) {
		return pin
	}
	return nil
}

// openHelper is mur-contain beside exe, pinned (not yet verified), or nil.
func openHelper(exe string) *command.Pinned {
	cand := filepath.Join(filepath.Dir(exe), HelperName)
	if cand == exe {
		return nil
	}
	pin, err := command.Pin(cand)
	if err != nil {
		return nil
	}
	return pin
}

// stamped tells whether the pinned file answers --version with exactly
// this build's stamp.
func stamped(pin *command.Pinned) bool {
	p, err := pin.Path()
	if err != nil {
		return false
	}
	out, err := exec.Command(p, "--version").Output()
	return err == nil && strings.TrimSpace(string(out)) == HelperName+" "+HelperStamp()
}
