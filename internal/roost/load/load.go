// Package load is roost-load, which measures mur-roost over loopback: it publishes a small
// fixture registry into a temporary HOME, starts the real mur-roost binary
// there, and drives it with a closed loop of N clients for a fixed time.
//
// Two mixes (-mode):
//
//   - mix (the default): drawn per request, about half GET /status/{id}, a
//     third POST /spawn (granted while the session has a free slot, refused
//     by --max-concurrent once it holds 4), and the rest POST /register
//     with an approval the client was granted and POST /deregister of a
//     child it registered.
//   - granted: POST /spawn only, against a daemon started with bounds no run
//     reaches, so every decision is a grant (approvals expire after their 60
//     seconds, as the specification says).
//
// -sessions N registers N top-level sessions before the clock starts (at
// least one per client); each client spreads its requests over its share.
// Each client holds one keep-alive connection and speaks HTTP/1.1 on it
// directly (-client nethttp uses Go's net/http client instead, which costs
// the driver about twice the CPU). Latency is taken per request on the
// client side, from just before the request is written to just after the
// answer's last byte is read, into log-linear histograms (p50 to p99.9 per
// request kind, nothing kept per request). CPU is read for both processes,
// and so is the time their threads spent runnable on the kernel's run queue
// (the variance a shared machine adds), along with the driver's own
// collections and goroutine scheduling latency; the daemon's resident set
// is sampled every -rss-every (start, end and peak of the series).
// -daemon-env KEY=VALUE adds to the daemon's environment (GOGC, GODEBUG,
// GOMAXPROCS, or a profiling build's MUR_ROOST_* switches).
//
//	go build -o /tmp/mur-roost ./cmd/mur-roost
//	go run ./cmd/roost-load -bin /tmp/mur-roost -clients 16 -duration 30s
//	go run ./cmd/roost-load -bin /tmp/mur-roost -mode granted -sessions 1000
package load

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/store"
)

type config struct {
	bin      string
	clients  int
	duration time.Duration
	mode     string
	sessions int
	client   string
	rssEvery time.Duration
	env      envList   // extra KEY=VALUE for the daemon (GOGC, GODEBUG, GOMAXPROCS, …)
	out, err io.Writer // the report; the daemon's own output
}

// envList is a repeatable -daemon-env flag.
type envList []string

func (e *envList) String() string { return strings.Join(*e, " ") }
func (e *envList) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	*e = append(*e, v)
	return nil
}

// Main runs roost-load with args (without the program name) and returns
// its exit status: 0, 1 when the run failed, 2 for a usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	c := config{out: stdout, err: stderr}
	fs := flag.NewFlagSet("roost-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.bin, "bin", "mur-roost", "the mur-roost binary to start")
	fs.IntVar(&c.clients, "clients", 16, "concurrent clients (closed loop)")
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "how long to run")
	fs.StringVar(&c.mode, "mode", "mix", "mix or granted")
	fs.IntVar(&c.sessions, "sessions", 0, "top-level sessions registered before the run (at least -clients)")
	fs.StringVar(&c.client, "client", "raw", "raw (HTTP/1.1 written directly) or nethttp (net/http.Client)")
	fs.DurationVar(&c.rssEvery, "rss-every", time.Second, "how often the daemon's resident set is sampled")
	fs.Var(&c.env, "daemon-env", "KEY=VALUE added to the daemon's environment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.mode != "mix" && c.mode != "granted" || c.client != "raw" && c.client != "nethttp" || c.clients < 1 {
		fmt.Fprintln(stderr, "roost-load: -mode is mix or granted, -client raw or nethttp, -clients at least 1")
		return 2
	}
	c.sessions = max(c.sessions, c.clients)
	if err := run(c); err != nil {
		fmt.Fprintln(stderr, "roost-load:", err)
		return 1
	}
	return 0
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
	lat       [nOps]histogram
	granted   int
	refused   int
	ended     int // children deregistered
	transport int
	unexpect  int
	firstErr  string
}

func (r *result) fail(msg string) {
	if r.firstErr == "" {
		r.firstErr = msg
	}
}

// publishFixture writes the two capsules the load names.
func publishFixture(reg string) error {
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
	return nil
}

func run(c config) error {
	tmpHome, err := os.MkdirTemp("", "roost-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpHome)
	if err := publishFixture(home.Artifacts(tmpHome)); err != nil {
		return err
	}

	args := []string{"--port", "0", "--spawn-allow", "local/orchestrator", "--max-live-capsules", "256"}
	if c.mode == "granted" {
		// No bound a run reaches: every decision is a grant.
		args = []string{"--port", "0", "--spawn-allow", "local/orchestrator",
			"--max-live-capsules", "1000000000", "--max-concurrent", "1000000000"}
	} else if c.sessions > 256/2 {
		// Each session and each of its live children counts toward the
		// ceiling; keep it out of the way of the per-session cap.
		args[len(args)-1] = strconv.Itoa(c.sessions * 6)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Env = []string{"HOME=" + tmpHome, "PATH=" + os.Getenv("PATH")}
	for _, kv := range os.Environ() { // a profiling build's switches (cmd/mur-roost/profile.go)
		if strings.HasPrefix(kv, "MUR_ROOST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, c.env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = c.err
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var addr string
	re := regexp.MustCompile(`listening on (\S+)`)
	for i := 0; i < 3 && sc.Scan(); i++ {
		fmt.Fprintln(c.out, sc.Text())
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	go io.Copy(io.Discard, out)
	if addr == "" {
		return fmt.Errorf("no listening line")
	}
	pid := cmd.Process.Pid

	// Pre-registration, off the clock, spread over the clients.
	t0 := time.Now()
	creds := make([]string, c.sessions)
	{
		var wg sync.WaitGroup
		errc := make(chan error, c.clients)
		for i := range c.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				x, err := dial(c.client, addr, c.clients)
				if err != nil {
					errc <- err
					return
				}
				defer x.close()
				for s := i; s < c.sessions; s += c.clients {
					code, body, _, err := x.do("POST", "/register", "", "",
						fmt.Sprintf(`{"session_id": "ses_load_%05d", "name": "local/orchestrator", "version": "0.1.0"}`, s))
					if err != nil || code != 200 {
						errc <- fmt.Errorf("pre-register %d: %d %s %v", s, code, body, err)
						return
					}
					creds[s] = field(body, "credential")
				}
			}()
		}
		wg.Wait()
		close(errc)
		if err := <-errc; err != nil {
			return err
		}
	}
	fmt.Fprintf(c.out, "registered %d sessions in %v\n", c.sessions, time.Since(t0).Round(time.Millisecond))
	// The registry reuses a resolve only once its files are a second old
	// (the racy-window rule): let the fixture settle, as any real registry has.
	time.Sleep(time.Until(t0.Add(1100 * time.Millisecond)))

	rss := startRSS(pid, c.rssEvery)
	daemonCPU0 := procCPU(pid)
	daemonWait0, loadWait0 := runDelay(pid), runDelay(os.Getpid())
	rt0 := readRuntime()
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	deadline := start.Add(c.duration)
	results := make([]*result, c.clients)
	var wg sync.WaitGroup
	for i := range c.clients {
		var mine []session
		for s := i; s < c.sessions; s += c.clients {
			mine = append(mine, session{id: fmt.Sprintf("ses_load_%05d", s), cred: creds[s]})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := &result{}
			results[i] = res
			x, err := dial(c.client, addr, c.clients)
			if err != nil {
				res.transport++
				res.fail(err.Error())
				return
			}
			defer x.close()
			client(x, c.mode, i, mine, deadline, res)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	daemonCPU := procCPU(pid) - daemonCPU0
	daemonWait, loadWait := runDelay(pid)-daemonWait0, runDelay(os.Getpid())-loadWait0
	rt := readRuntime().since(rt0)
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	loadCPU := tv(ru1.Utime) + tv(ru1.Stime) - tv(ru0.Utime) - tv(ru0.Stime)
	series := rss.stop()

	var all histogram
	var per [nOps]histogram
	total := result{}
	for _, r := range results {
		for op := range nOps {
			per[op].add(&r.lat[op])
			all.add(&r.lat[op])
		}
		total.granted += r.granted
		total.refused += r.refused
		total.ended += r.ended
		total.transport += r.transport
		total.unexpect += r.unexpect
		total.fail(r.firstErr)
	}
	fmt.Fprintf(c.out, "mode %s, client %s, clients %d, sessions %d, %s, %d requests: %.0f req/s; transport errors %d, unexpected answers %d\n",
		c.mode, c.client, c.clients, c.sessions, elapsed.Round(time.Millisecond), all.n, float64(all.n)/elapsed.Seconds(), total.transport, total.unexpect)
	if total.firstErr != "" {
		fmt.Fprintln(c.out, "first error:", total.firstErr)
	}
	fmt.Fprintf(c.out, "all:  %s\n", all.pcts())
	for op := range nOps {
		if per[op].n > 0 {
			fmt.Fprintf(c.out, "  %-17s %5.1f%%  %s\n", opNames[op], 100*float64(per[op].n)/float64(all.n), per[op].pcts())
		}
	}
	fmt.Fprintf(c.out, "spawns granted %d (%.0f/s), refused %d; children ended %d\n",
		total.granted, float64(total.granted)/elapsed.Seconds(), total.refused, total.ended)
	fmt.Fprintf(c.out, "CPU: mur-roost %.2f s (%.0f%% of one core; %.1f µs per request", daemonCPU.Seconds(),
		100*daemonCPU.Seconds()/elapsed.Seconds(), float64(daemonCPU.Microseconds())/float64(max(all.n, 1)))
	if c.mode == "granted" {
		fmt.Fprintf(c.out, ", %.1f µs per granted decision", float64(daemonCPU.Microseconds())/float64(max(total.granted, 1)))
	}
	fmt.Fprintf(c.out, "), roost-load %.2f s (%.0f%% of one core), over %.1f s wall\n",
		loadCPU.Seconds(), 100*loadCPU.Seconds()/elapsed.Seconds(), elapsed.Seconds())
	// Time runnable but not running: what the kernel's run queue added.
	fmt.Fprintf(c.out, "waiting for a CPU (run queue, all threads): mur-roost %.2f s, roost-load %.2f s\n",
		daemonWait.Seconds(), loadWait.Seconds())
	fmt.Fprintf(c.out, "roost-load itself: %s\n", rt)
	fmt.Fprintln(c.out, series.summary(total.ended))
	if total.transport > 0 || total.unexpect > 0 {
		return fmt.Errorf("%d transport errors, %d unexpected answers", total.transport, total.unexpect)
	}
	return nil
}

type session struct{ id, cred string }

func client(x exchanger, mode string, i int, mine []session, deadline time.Time, res *result) {
	rng := rand.New(rand.NewPCG(uint64(i), 42))
	const spawnBody = `{"name": "local/worker-a", "version": "0.1.0"}`
	do := func(op int, method, path, hdr, val, body string, want ...int) (int, []byte) {
		code, data, took, err := x.do(method, path, hdr, val, body)
		if err != nil {
			res.transport++
			res.fail(err.Error())
			return 0, nil
		}
		res.lat[op].record(took)
		for _, w := range want {
			if code == w {
				return code, data
			}
		}
		res.unexpect++
		res.fail(fmt.Sprintf("%s %s: %d %s", method, path, code, data))
		return 0, nil
	}
	type queues struct{ approvals, children []string }
	qs := make([]queues, len(mine))
	statusPath := make([]string, len(mine))
	for k, s := range mine {
		statusPath[k] = roostapi.PathStatus + s.id
	}
	var seq int
	var regBody []byte
	for n := 0; time.Now().Before(deadline); n++ {
		k := n % len(mine)
		s, q := mine[k], &qs[k]
		if mode == "granted" {
			if code, _ := do(opSpawn, "POST", "/spawn", roostapi.HeaderCredential, s.cred, spawnBody, 200); code == 200 {
				res.granted++
			}
			continue
		}
		x := rng.IntN(600)
		switch {
		case x < 300: // ½
			do(opStatus, "GET", statusPath[k], "", "", "", 200)
		case x < 500: // ⅓
			code, data := do(opSpawn, "POST", "/spawn", roostapi.HeaderCredential, s.cred, spawnBody, 200, 403)
			if code == 200 {
				res.granted++
				q.approvals = append(q.approvals, field(data, "approval"))
			} else if code == 403 {
				res.refused++
			}
		case x < 550 && len(q.approvals) > 0:
			ap := q.approvals[0]
			q.approvals = q.approvals[1:]
			seq++
			regBody = append(regBody[:0], `{"session_id": "`...)
			regBody = append(regBody, s.id...)
			regBody = append(regBody, "_c"...)
			regBody = strconv.AppendInt(regBody, int64(seq), 10)
			regBody = append(regBody, `", "name": "local/worker-a", "version": "0.1.0"}`...)
			code, data := do(opRegister, "POST", "/register", roostapi.HeaderApproval, ap, string(regBody), 200)
			if code == 200 {
				q.children = append(q.children, field(data, "credential"))
			}
		case x >= 550 && len(q.children) > 0:
			c := q.children[0]
			q.children = q.children[1:]
			if code, _ := do(opDeregister, "POST", "/deregister", roostapi.HeaderCredential, c, `{"outcome": "complete"}`, 200); code == 200 {
				res.ended++
			}
		default:
			do(opStatus, "GET", statusPath[k], "", "", "", 200)
		}
	}
}

// field is a string field of a JSON answer ("" when absent). The daemon's
// answers are flat objects whose tokens need no escapes, so the plain case
// is a scan; anything else goes through encoding/json.
func field(body []byte, key string) string {
	var k [64]byte
	pat := append(append(append(k[:0], '"'), key...), `":`...)
	if i := bytes.Index(body, pat); i >= 0 {
		rest := bytes.TrimLeft(body[i+len(pat):], " ")
		if len(rest) > 0 && rest[0] == '"' {
			if j := bytes.IndexByte(rest[1:], '"'); j >= 0 && bytes.IndexByte(rest[1:j+1], '\\') < 0 {
				return string(rest[1 : j+1])
			}
		}
	}
	var m map[string]any
	json.Unmarshal(body, &m)
	s, _ := m[key].(string)
	return s
}

// ---- HTTP exchange ---------------------------------------------------------

// exchanger sends one request and returns the answer's status, its body
// and the latency: from just before the request's first byte is written to
// just after the answer's last byte is read, so building the request and
// looking at the answer are not counted. hdr names one request header (or "").
type exchanger interface {
	do(method, path, hdr, val, body string) (int, []byte, time.Duration, error)
	close()
}

func dial(kind, addr string, clients int) (exchanger, error) {
	if kind == "nethttp" {
		tr := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, IdleConnTimeout: time.Minute}
		return &netHTTP{hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}, base: "http://" + addr}, nil
	}
	r := &raw{addr: addr}
	return r, r.connect()
}

type netHTTP struct {
	hc   *http.Client
	base string
}

func (n *netHTTP) do(method, path, hdr, val, body string) (int, []byte, time.Duration, error) {
	req, _ := http.NewRequest(method, n.base+path, strings.NewReader(body))
	if hdr != "" {
		req.Header.Set(hdr, val)
	}
	t0 := time.Now()
	resp, err := n.hc.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	data, err := io.ReadAll(resp.Body)
	took := time.Since(t0)
	resp.Body.Close()
	return resp.StatusCode, data, took, err
}

func (n *netHTTP) close() { n.hc.CloseIdleConnections() }

// raw is one keep-alive HTTP/1.1 connection, written and read directly: the
// daemon answers every request with a Content-Length body.
type raw struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	wb   []byte
	body []byte
}

func (r *raw) connect() error {
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		return err
	}
	r.c, r.br = c, bufio.NewReaderSize(c, 8<<10)
	return nil
}

func (r *raw) close() {
	if r.c != nil {
		r.c.Close()
	}
}

var errProtocol = errors.New("unexpected HTTP answer")

func (r *raw) do(method, path, hdr, val, body string) (int, []byte, time.Duration, error) {
	w := r.wb[:0]
	w = append(w, method...)
	w = append(w, ' ')
	w = append(w, path...)
	w = append(w, " HTTP/1.1\r\nHost: roost\r\n"...)
	if hdr != "" {
		w = append(w, hdr...)
		w = append(w, ": "...)
		w = append(w, val...)
		w = append(w, "\r\n"...)
	}
	if method == "POST" {
		w = append(w, "Content-Type: application/json\r\nContent-Length: "...)
		w = strconv.AppendInt(w, int64(len(body)), 10)
		w = append(w, "\r\n"...)
	}
	w = append(w, "\r\n"...)
	w = append(w, body...)
	r.wb = w
	t0 := time.Now()
	if _, err := r.c.Write(w); err != nil {
		return 0, nil, 0, err
	}
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, 0, errProtocol
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, 0, errProtocol
	}
	n, closing := -1, false
	for {
		h, err := r.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, 0, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, _ := bytes.Cut(h, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if n, err = strconv.Atoi(string(v)); err != nil {
				return 0, nil, 0, errProtocol
			}
		case bytes.EqualFold(k, []byte("Connection")) && bytes.EqualFold(v, []byte("close")):
			closing = true
		}
	}
	if n < 0 {
		return 0, nil, 0, errProtocol
	}
	if cap(r.body) < n {
		r.body = make([]byte, n)
	}
	b := r.body[:n]
	if _, err := io.ReadFull(r.br, b); err != nil {
		return 0, nil, 0, err
	}
	took := time.Since(t0)
	if closing {
		r.c.Close()
		if err := r.connect(); err != nil {
			return 0, nil, 0, err
		}
	}
	return code, b, took, nil
}

// ---- figures ---------------------------------------------------------------

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

// procRSS is VmRSS of pid in KiB (0 when it cannot be read).
func procRSS(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

type rssSampler struct {
	pid     int
	stopc   chan struct{}
	done    chan struct{}
	every   time.Duration
	samples []int
}

func startRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{pid: pid, stopc: make(chan struct{}), done: make(chan struct{}), every: every}
	s.samples = append(s.samples, procRSS(pid))
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stopc:
				return
			case <-t.C:
				s.samples = append(s.samples, procRSS(pid))
			}
		}
	}()
	return s
}

func (s *rssSampler) stop() *rssSampler {
	close(s.stopc)
	<-s.done
	s.samples = append(s.samples, procRSS(s.pid))
	return s
}

// summary states the series: start, end, peak, and the samples a tenth of
// the way apart, then the growth per ended child session.
func (s *rssSampler) summary(ended int) string {
	first, last, peak := s.samples[0], s.samples[len(s.samples)-1], 0
	for _, v := range s.samples {
		peak = max(peak, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mur-roost RSS (KiB, every %v, %d samples): start %d, end %d, max %d", s.every, len(s.samples), first, last, peak)
	if ended > 0 {
		fmt.Fprintf(&b, "; %+.0f B per ended child session", float64(last-first)*1024/float64(ended))
	}
	b.WriteString("\n  series:")
	step := max(len(s.samples)/10, 1)
	for i := 0; i < len(s.samples); i += step {
		fmt.Fprintf(&b, " %d", s.samples[i])
	}
	return b.String()
}
