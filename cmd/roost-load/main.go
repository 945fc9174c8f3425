// Command roost-load measures mur-roost over loopback: it publishes a small
// fixture registry into a temporary HOME, starts the real mur-roost binary
// there, and drives it with a closed loop of N clients for a fixed time.
//
// The mix, drawn per request: about half GET /status/{id}, a third POST
// /spawn (granted while the session has a free slot, refused by
// --max-concurrent once it holds 4), and the rest POST /register with an
// approval the client was granted and POST /deregister of a child it
// registered. Every client owns one top-level session. Latencies are taken
// per request on the client side; CPU is read for both processes.
//
//	go build -o /tmp/mur-roost ./cmd/mur-roost
//	go run ./cmd/roost-load -bin /tmp/mur-roost -clients 16 -duration 30s
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/store"
)

func main() {
	bin := flag.String("bin", "mur-roost", "the mur-roost binary to start")
	clients := flag.Int("clients", 16, "concurrent clients (closed loop)")
	duration := flag.Duration("duration", 30*time.Second, "how long to run")
	flag.Parse()
	if err := run(*bin, *clients, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "roost-load:", err)
		os.Exit(1)
	}
}

const (
	opStatus = iota
	opSpawn
	opRegister
	opDeregister
	nOps
)

var opNames = [nOps]string{"GET /status", "POST /spawn", "POST /register", "POST /deregister"}

type result struct {
	lat       [nOps][]time.Duration
	granted   int
	refused   int
	transport int
	unexpect  int
	firstErr  string
}

func run(bin string, clients int, duration time.Duration) error {
	tmpHome, err := os.MkdirTemp("", "roost-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpHome)
	reg := home.Artifacts(tmpHome)
	for _, c := range []struct{ name, caps string }{
		{"local/orchestrator", "  spawn:\n    allow: [local/worker-a]\n"},
		{"local/worker-a", ""},
	} {
		y := fmt.Sprintf("name: %s\nversion: \"0.1.0\"\ninference:\n  model: m\n", c.name)
		if c.caps != "" {
			y += "capabilities:\n" + c.caps
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create("murmur.yaml")
		w.Write([]byte(y))
		zw.Close()
		if _, err := store.At(reg).Publish(buf.Bytes(), true); err != nil {
			return fmt.Errorf("publish %s: %w", c.name, err)
		}
	}

	cmd := exec.Command(bin, "--port", "0", "--spawn-allow", "local/orchestrator", "--max-live-capsules", "256")
	cmd.Env = []string{"HOME=" + tmpHome, "PATH=" + os.Getenv("PATH")}
	for _, kv := range os.Environ() { // a profiling build's switches (cmd/mur-roost/profile.go)
		if strings.HasPrefix(kv, "MUR_ROOST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var addr string
	re := regexp.MustCompile(`listening on (\S+)`)
	for i := 0; i < 3 && sc.Scan(); i++ {
		fmt.Println(sc.Text())
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	go io.Copy(io.Discard, out)
	if addr == "" {
		return fmt.Errorf("no listening line")
	}
	base := "http://" + addr

	tr := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	daemonCPU0 := procCPU(cmd.Process.Pid)
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	deadline := start.Add(duration)
	results := make([]*result, clients)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = client(hc, base, i, deadline)
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	daemonCPU := procCPU(cmd.Process.Pid) - daemonCPU0
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	loadCPU := tv(ru1.Utime) + tv(ru1.Stime) - tv(ru0.Utime) - tv(ru0.Stime)

	var all []time.Duration
	var per [nOps][]time.Duration
	total := result{}
	for _, r := range results {
		for op := 0; op < nOps; op++ {
			per[op] = append(per[op], r.lat[op]...)
			all = append(all, r.lat[op]...)
		}
		total.granted += r.granted
		total.refused += r.refused
		total.transport += r.transport
		total.unexpect += r.unexpect
		if total.firstErr == "" {
			total.firstErr = r.firstErr
		}
	}
	fmt.Printf("clients %d, %s, %d requests: %.0f req/s; transport errors %d, unexpected answers %d\n",
		clients, elapsed.Round(time.Millisecond), len(all), float64(len(all))/elapsed.Seconds(), total.transport, total.unexpect)
	if total.firstErr != "" {
		fmt.Println("first error:", total.firstErr)
	}
	fmt.Printf("all:  %s\n", pcts(all))
	for op := 0; op < nOps; op++ {
		fmt.Printf("  %-17s %5.1f%%  %s\n", opNames[op], 100*float64(len(per[op]))/float64(len(all)), pcts(per[op]))
	}
	fmt.Printf("spawns granted %d, refused %d\n", total.granted, total.refused)
	fmt.Printf("CPU: mur-roost %.2f s (%.0f%% of one core), roost-load %.2f s (%.0f%% of one core), over %.1f s wall\n",
		daemonCPU.Seconds(), 100*daemonCPU.Seconds()/elapsed.Seconds(), loadCPU.Seconds(), 100*loadCPU.Seconds()/elapsed.Seconds(), elapsed.Seconds())
	if total.transport > 0 || total.unexpect > 0 {
		return fmt.Errorf("%d transport errors, %d unexpected answers", total.transport, total.unexpect)
	}
	return nil
}

func client(hc *http.Client, base string, i int, deadline time.Time) *result {
	res := &result{}
	rng := rand.New(rand.NewPCG(uint64(i), 42))
	sid := fmt.Sprintf("ses_load_%02d", i)
	var seq int
	do := func(op int, method, path string, hdr map[string]string, body string, want ...int) map[string]any {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			res.transport++
			if res.firstErr == "" {
				res.firstErr = err.Error()
			}
			return nil
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		res.lat[op] = append(res.lat[op], time.Since(t0))
		if err != nil {
			res.transport++
			return nil
		}
		ok := false
		for _, w := range want {
			ok = ok || resp.StatusCode == w
		}
		if !ok {
			res.unexpect++
			if res.firstErr == "" {
				res.firstErr = fmt.Sprintf("%s %s: %d %s", method, path, resp.StatusCode, data)
			}
			return nil
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		m["_code"] = float64(resp.StatusCode)
		return m
	}
	reg := do(opRegister, "POST", "/register", nil, fmt.Sprintf(`{"session_id": %q, "name": "local/orchestrator", "version": "0.1.0"}`, sid), 200)
	if reg == nil {
		return res
	}
	cred, _ := reg["credential"].(string)
	var approvals, children []string
	for time.Now().Before(deadline) {
		x := rng.IntN(600)
		switch {
		case x < 300: // ½
			do(opStatus, "GET", "/status/"+sid, nil, "", 200)
		case x < 500: // ⅓
			m := do(opSpawn, "POST", "/spawn", map[string]string{roostapi.HeaderCredential: cred},
				`{"name": "local/worker-a", "version": "0.1.0"}`, 200, 403)
			if m != nil && m["_code"] == float64(200) {
				res.granted++
				approvals = append(approvals, m["approval"].(string))
			} else if m != nil {
				res.refused++
			}
		case x < 550 && len(approvals) > 0:
			ap := approvals[0]
			approvals = approvals[1:]
			seq++
			m := do(opRegister, "POST", "/register", map[string]string{roostapi.HeaderApproval: ap},
				fmt.Sprintf(`{"session_id": "%s_c%d", "name": "local/worker-a", "version": "0.1.0"}`, sid, seq), 200)
			if m != nil {
				children = append(children, m["credential"].(string))
			}
		case x >= 550 && len(children) > 0:
			c := children[0]
			children = children[1:]
			do(opDeregister, "POST", "/deregister", map[string]string{roostapi.HeaderCredential: c}, `{"outcome": "complete"}`, 200)
		default:
			do(opStatus, "GET", "/status/"+sid, nil, "", 200)
		}
	}
	return res
}

func pcts(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	p := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))] }
	return fmt.Sprintf("p50 %v  p99 %v  max %v", p(0.5).Round(time.Microsecond), p(0.99).Round(time.Microsecond), s[len(s)-1].Round(time.Microsecond))
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// procCPU is utime+stime of pid from /proc/<pid>/stat (fields 14 and 15,
// in clock ticks of 1/100 s).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}
