package wasmhost

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// TEMPORARY probe (removed before the end).
var probeOn = os.Getenv("WH_PROBE") != ""
var probeNoSpin = os.Getenv("WH_NOSPIN") != ""
var probeNoSync = os.Getenv("WH_NOSYNC") != ""
var probeNoPrime = os.Getenv("WH_NOPRIME") != ""

var probeMu sync.Mutex
var probeIn = map[string][]time.Duration{}
var probeGap = map[string][]time.Duration{}
var probeLast time.Time

func probeRecord(fn string, t0, t1 time.Time) {
	probeMu.Lock()
	defer probeMu.Unlock()
	probeIn[fn] = append(probeIn[fn], t1.Sub(t0))
	if !probeLast.IsZero() && t0.Sub(probeLast) < 5*time.Millisecond {
		probeGap[fn] = append(probeGap[fn], t0.Sub(probeLast))
	}
	probeLast = t1
}

var probeT = map[string][]time.Duration{}

func probeMark(what string, d time.Duration) {
	if !probeOn {
		return
	}
	probeMu.Lock()
	probeT[what] = append(probeT[what], d)
	probeMu.Unlock()
}

func ProbeDump() {
	probeMu.Lock()
	defer probeMu.Unlock()
	med := func(d []time.Duration) time.Duration { d = slices.Clone(d); slices.Sort(d); if len(d)==0 {return 0}; return d[len(d)/2] }
	for k, v := range probeIn {
		fmt.Fprintf(os.Stderr, "PROBE in %-55s n=%5d med=%v gapmed=%v\n", k, len(v), med(v), med(probeGap[k]))
	}
	for k, v := range probeT {
		fmt.Fprintf(os.Stderr, "PROBE t  %-55s n=%5d med=%v\n", k, len(v), med(v))
	}
}
