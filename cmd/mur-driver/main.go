// Command mur-driver is the driver helper of the split build, installed beside
// a mur built with the murdriver tag (scripts/install.sh): it runs the
// provider built-ins (murmur/driver-anthropic, murmur/driver-openai) and links
// their SDKs, so that such a mur does not start them in every process
// (internal/driver/remote/RATIONALE.md). A plain mur build links them itself
// and never uses it. The split mur starts it, one per
// agent session with such a driver, and speaks to it on stdin and stdout; run
// by hand it only says what it is.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
	"github.com/murmur-go/murmur/internal/driver/remote"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(remote.HelperName + " " + remote.Stamp())
		return
	}
	if len(os.Args) != 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "mur-driver is mur's driver helper: mur starts it for an agent whose driver is a provider built-in")
		os.Exit(2)
	}
	// The helper's life is its stdin: mur closes it once the session has
	// wound down. A signal to mur's process group (a launcher ending a
	// delegated child) must not end the helper first, or the call in flight
	// fails with the pipe before mur has cancelled its task; SIGKILL still
	// ends it, and mur's exit closes the pipe.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	err := remote.Serve(os.Stdin, os.Stdout, func(cfg driver.Config) (driver.Driver, error) {
		d, ok, err := providers.New(cfg)
		if err == nil && !ok {
			err = fmt.Errorf("%s is not a driver built into mur-driver", cfg.Name)
		}
		return d, err
	})
	if err != nil {
		slog.Error("mur-driver", "err", err)
		os.Exit(1)
	}
}
