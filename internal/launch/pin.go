package launch

import (
	"os"
	"path/filepath"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/delegate"
)

// pinRuntime opens the runtime's own helpers once, at the start of a run,
// so that each is run by its descriptor from then on (command.Pinned): a
// file replaced on disk after the run started is never the one run.
// mur-contain (every command's helper) and mur-driver (which receives the
// provider's key) are pinned where they are found beside mur. A delegated
// child runs /proc/self/exe, the running mur itself (murBinary).
func (p *Plan) pinRuntime() {
	contain.PinHelper()
	pinProviderHelper()
}

// murBinary is what a delegated child is started as: MURMUR_MUR_BINARY
// when the person running mur set it (run by its path: it may be a
// wrapper script, which no descriptor can run; its directory is kept out
// of every work folder all the same), else the running mur itself.
func (p *Plan) murBinary() string {
	if bin, _ := p.lookup(delegate.EnvMurBinary); bin != "" {
		return bin
	}
	return "/proc/self/exe"
}

// runtimeBinaries are the files whose directories no work folder may hold
// (session.CheckWorkdir): this executable (mur-contain and mur-driver are
// looked for beside it) and MURMUR_MUR_BINARY when set.
func (p *Plan) runtimeBinaries() []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		out = append(out, exe)
	}
	if bin, _ := p.lookup(delegate.EnvMurBinary); bin != "" {
		if abs, err := filepath.Abs(bin); err == nil {
			out = append(out, abs)
		}
	}
	return out
}
