package contain

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var (
	helperOnce sync.Once
	helperPath string // "" : re-execute this binary
)

// helper is the binary the init helper runs as: mur-contain beside this
// executable when it answers with this build's stamp, else this binary.
func helper() string {
	helperOnce.Do(func() {
		if helperPath != "" {
			return // set by a test
		}
		if exe, err := os.Executable(); err == nil {
			helperPath = findHelper(exe)
		}
	})
	if helperPath != "" {
		return helperPath
	}
	self, _ := selfExe()
	return self
}

// findHelper is mur-contain beside exe when its --version is exactly
// this build's stamp, else "".
func findHelper(exe string) string {
	cand := filepath.Join(filepath.Dir(exe), HelperName)
	if cand == exe {
		return ""
	}
	out, err := exec.Command(cand, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != HelperName+" "+HelperStamp() {
		return ""
	}
	return cand
}
