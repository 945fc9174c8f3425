//go:build roostpprof

package main

import (
	"os"
	"runtime/pprof"
)

// A build with -tags roostpprof writes a CPU profile of the daemon's whole
// life to $MUR_ROOST_CPUPROFILE and a heap profile at exit to
// $MUR_ROOST_HEAPPROFILE (the load driver stops it with SIGTERM, a clean
// shutdown). It exists to profile the real binary under cmd/roost-load;
// release builds carry none of it.
func init() {
	if p := os.Getenv("MUR_ROOST_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			panic(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			panic(err)
		}
		prev := atExit
		atExit = func() { pprof.StopCPUProfile(); f.Close(); prev() }
	}
	if p := os.Getenv("MUR_ROOST_HEAPPROFILE"); p != "" {
		prev := atExit
		atExit = func() {
			prev()
			if f, err := os.Create(p); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}
}
