package roost

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/store"
)

// benchDaemon is an in-process daemon holding 1,000 tracked sessions and 256
// live start-up records (all naming this process, so all stay live).
func benchDaemon(b *testing.B, padBytes int) (*Server, string) {
	return benchDaemonAt(b, padBytes, true)
}

// benchDaemonAt is benchDaemon with the registry's files settled (older than
// the racy window: resolves are cached) or not (every resolve is a full
// pass: read, SHA-256, entries, sidecars, parse).
func benchDaemonAt(b *testing.B, padBytes int, settledFiles bool) (*Server, string) {
	b.Helper()
	fx := newFixture(b)
	childName := "local/worker-a"
	if padBytes > 0 {
		// A script capsule with a padBytes component, built the way
		// `mur build` builds it (store.Pack stores .wasm entries as they are).
		dir := b.TempDir()
		os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte("name: local/worker-b\nversion: \"0.1.0\"\n"), 0o644)
		comp := append(make([]byte, 0, padBytes), 0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00)
		r := rand.New(rand.NewPCG(1, 2))
		for len(comp) < padBytes {
			comp = append(comp, byte(r.Uint32()))
		}
		os.WriteFile(filepath.Join(dir, "capsule.wasm"), comp, 0o644)
		built, err := store.Pack(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := store.At(fx.reg).Publish(built.Zip, true); err != nil {
			b.Fatal(err)
		}
		childName = "local/worker-b"
	}
	homeDir := b.TempDir()
	dir := home.Running(homeDir)
	os.MkdirAll(dir, 0o700)
	pid, start, err := running.Self()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 256; i++ {
		writeRecord(b, dir, record(fmt.Sprintf("ses_startup_%03d", i), pid, start))
	}
	// A registry in service: its files are older than the racy window, so
	// an unchanged artifact is the cached answer (three stat calls).
	reg := StoreRegistry(fx.reg)
	reg.(*storeRegistry).now = func() time.Time { return time.Now().Add(time.Hour) }
	if !settledFiles {
		reg.(*storeRegistry).now = func() time.Time { return time.Unix(0, 0) }
	}
	srv, cnt, err := New(Options{MaxDepth: 3, MaxConcurrent: 1 << 30, MaxLiveCapsules: 1 << 30,
		SpawnAllow: []string{"local/orchestrator"}, Registry: reg, RunningDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	if cnt.Live != 256 {
		b.Fatalf("start-up census counted %d", cnt.Live)
	}
	ft := &fuzzTarget{srv: srv}
	var cred string
	for i := 0; i < 1000; i++ {
		r := ft.serve(b, "POST", "/register", nil, fmt.Sprintf(`{"session_id": "ses_%04d", "name": "local/orchestrator", "version": "0.1.0"}`, i))
		cred = r.str("credential")
	}
	if s := srv.Snapshot(); s.Census != 1256 {
		b.Fatalf("census %d, want 1256", s.Census)
	}
	return srv, cred + "\x00" + childName
}

// benchSpawn measures one POST /spawn decision through the real handler:
// body, credential, allow list, the three bounds with the census re-checking
// 256 start-up records (once), the registry resolve (unchanged files: three
// stat calls), the envelope, the reservation and the approval.
func benchSpawn(b *testing.B, padBytes int, settledFiles bool) {
	srv, both := benchDaemonAt(b, padBytes, settledFiles)
	cred, child, _ := strings.Cut(both, "\x00")
	body := fmt.Sprintf(`{"name": %q, "version": "0.1.0"}`, child)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/spawn", strings.NewReader(body))
		req.Header[HeaderCredential] = []string{cred}
		rec := httptest.NewRecorder()
		t0 := time.Now()
		srv.ServeHTTP(rec, req)
		lat = append(lat, time.Since(t0))
		if rec.Code != 200 {
			b.Fatalf("spawn: %d %s", rec.Code, rec.Body.String())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	reportPercentiles(b, lat)
}

// cpuTime is this process's user+system CPU time: on a shared machine the
// CPU an operation costs is steadier than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

func BenchmarkSpawnDecision(b *testing.B)             { benchSpawn(b, 0, true) }
func BenchmarkSpawnDecision5MBComponent(b *testing.B) { benchSpawn(b, 5<<20, true) }

// The same decisions when the registry's answer cannot be reused (the
// artifact was just written): every resolve is a full pass.
func BenchmarkSpawnDecisionFullResolve(b *testing.B)             { benchSpawn(b, 0, false) }
func BenchmarkSpawnDecisionFullResolve5MBComponent(b *testing.B) { benchSpawn(b, 5<<20, false) }

// BenchmarkCensusRead256 is one census read with 256 live start-up records:
// the re-check of every one of them (poll over their pidfds) plus the counts.
func BenchmarkCensusRead256(b *testing.B) {
	srv, _ := benchDaemon(b, 0)
	lat := make([]time.Duration, 0, b.N)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		s := srv.Snapshot()
		lat = append(lat, time.Since(t0))
		if s.Startup != 256 {
			b.Fatalf("startup %d", s.Startup)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1000/float64(b.N), "cpu-µs/op")
	reportPercentiles(b, lat)
}

// BenchmarkStartupScan256 is the start-up census itself: reading and
// classifying 256 records in ~/.murmur/running and opening their pidfds.
func BenchmarkStartupScan256(b *testing.B) {
	dir := home.Running(b.TempDir())
	os.MkdirAll(dir, 0o700)
	pid, start, _ := running.Self()
	for i := 0; i < 256; i++ {
		writeRecord(b, dir, record(fmt.Sprintf("ses_startup_%03d", i), pid, start))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		set, cnt, err := scanStartup(dir)
		if err != nil || cnt.Live != 256 {
			b.Fatal(err, cnt)
		}
		set.close()
	}
}

// BenchmarkCensusReadSlowPath256 re-checks 256 records the way a daemon
// without pidfds would (kill(0) + /proc/<pid>/stat each), for comparison.
func BenchmarkCensusReadSlowPath256(b *testing.B) {
	pid, start, _ := running.Self()
	recs := make([]running.Record, 256)
	for i := range recs {
		recs[i] = record(fmt.Sprintf("ses_%d", i), pid, start)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		for _, r := range recs {
			if r.Alive() {
				n++
			}
		}
		if n != 256 {
			b.Fatal(n)
		}
	}
}
