package launch

import (
	"os"
	"path/filepath"

	"github.com/murmur-go/murmur/internal/command"
	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
)

// pinRuntime opens the runtime's own binaries once, at the start of a run,
// so that each is run by its descriptor from then on (command.Pinned): a
// file replaced on disk after the run started is never the one run.
// mur-contain (every command's helper) and mur-driver (which receives the
// provider's key) are pinned where they are found beside mur; a delegated
// child runs /proc/self/exe, the running mur itself, unless
// MURMUR_MUR_BINARY names another, which is pinned here.
func (p *Plan) pinRuntime() error {
	contain.PinHelper()
	pinProviderHelper()
	if bin, _ := p.lookup(delegate.EnvMurBinary); bin != "" && p.murBin == nil {
		pin, err := command.Pin(bin)
		if err != nil {
			return diag.Wrap(err, "E-RUN-175", "%s names %s, which cannot be opened to run delegated children", delegate.EnvMurBinary, bin)
		}
		p.murBin = pin
	}
	return nil
}

// murBinary is what a delegated child is started as.
func (p *Plan) murBinary() string {
	if p.murBin != nil {
		if path, err := p.murBin.Path(); err == nil {
			return path
		}
		// Changed in place since the run started: not run. This binary
		// stands in, as when no MURMUR_MUR_BINARY is set.
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
