package roost

import (
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// vmHWM is a process's peak resident set in KiB.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestRegisterLargeArtifactMemory reproduces issue 14 item 8: concurrent
// unverified /register requests naming one large artifact. The daemon must
// never hold a copy of the artifact in memory: its peak resident set may
// grow by less than the artifact's size, and every request is answered.
// MURMUR_ROOST_RSS_MB and MURMUR_ROOST_RSS_N scale it (the figure is
// 200 and 30; the default keeps the suite light).
func TestRegisterLargeArtifactMemory(t *testing.T) {
	mb, n := 32, 10
	if v, err := strconv.Atoi(os.Getenv("MURMUR_ROOST_RSS_MB")); err == nil && v > 0 {
		mb = v
	}
	if v, err := strconv.Atoi(os.Getenv("MURMUR_ROOST_RSS_N")); err == nil && v > 0 {
		n = v
	}
	reg := t.TempDir()
	pad := make([]byte, mb<<20)
	rand.Read(pad) // incompressible: the zip is as large as the payload
	publish(t, reg, "local/big", "0.1.0", "", pad...)
	pad = nil
	d := startDaemon(t, t.TempDir(), "--registry-path", reg, "--spawn-allow", "local/big")
	pid := d.cmd.Process.Pid
	base := vmHWM(t, pid)

	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := d.register(fmt.Sprintf("ses_big_%d", i), "local/big", "0.1.0", ""); r.code != 200 {
				errs <- fmt.Sprintf("register %d: %d %s", i, r.code, r.raw)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	peak := vmHWM(t, pid)
	t.Logf("%d concurrent /register of a %d MiB artifact: peak RSS %d KiB (at start %d KiB)", n, mb, peak, base)
	if grew := peak - base; grew >= mb<<10 {
		t.Fatalf("peak RSS grew by %d KiB, not less than the artifact's %d KiB", grew, mb<<10)
	}
}
