package main

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/cli"
)

// Start-up allocates a run's working set at once (the manifest, the
// artifacts read whole, the engine's and the session's structures): under
// the default GOGC the collector ran twice within a warm 30 ms run of
// examples/hello-script, scanning a heap that was only growing. So `mur run`
// starts with the collector paused, under a soft memory limit that still
// triggers it should start-up allocate that much, and resumes the default
// pacing after startupGCPause, or as soon as an agent session is ready
// (cli.AgentReady), whichever comes first: an agent serving its first tasks
// with the collector held back grew to the soft limit (a 85 MiB peak where
// the default pacing keeps 53 MiB, BenchmarkAgentLongSessionRSS). A run that
// is still going then collects as before. An explicit GOGC or GOMEMLIMIT in
// the environment is left alone.
const (
	startupGCPause = 250 * time.Millisecond
	startupGCLimit = 64 << 20
)

func pauseStartupGC(args []string) {
	if len(args) == 0 || args[0] != "run" {
		return
	}
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	prev := debug.SetGCPercent(-1)
	debug.SetMemoryLimit(startupGCLimit)
	var once sync.Once
	resume := func() {
		once.Do(func() {
			debug.SetGCPercent(prev)
			debug.SetMemoryLimit(math.MaxInt64)
		})
	}
	time.AfterFunc(startupGCPause, resume)
	cli.AgentReady = resume
}
