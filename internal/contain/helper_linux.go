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
	helperPath   string          // set by a test: run this path
	helperPinned *command.Pinned // nil: re-execute this binary
)

// PinHelper opens mur-contain beside this executable, when it answers with
// this build's stamp, once: every command's helper is then that file run
// by its descriptor (command.Pinned), so a mur-contain replaced on disk
// after the runtime started is never run. The runtime calls it at start;
// the first helper call makes it otherwise.
func PinHelper() {
	helperOnce.Do(func() {
		if helperPath != "" {
			return // set by a test
		}
		if exe, err := os.Executable(); err == nil {
			helperPinned = findHelper(exe)
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
	cand := filepath.Join(filepath.Dir(exe), HelperName)
	if cand == exe {
		return nil
	}
	pin, err := command.Pin(cand)
	if err != nil {
		return nil
	}
	p, err := pin.Path()
	if err != nil {
		return nil
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != HelperName+" "+HelperStamp() {
		return nil
	}
	return pin
}
