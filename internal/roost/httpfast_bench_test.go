package roost

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkLoopbackSpawn is one granted POST /spawn over a keep-alive
// loopback connection, the client writing and reading the bytes itself, with
// the daemon's handler behind net/http alone or behind the fast path. The
// allocations are the whole process's: the client's are a few bytes.
func BenchmarkLoopbackSpawn(b *testing.B) {
	for _, c := range []struct {
		name string
		fast bool
	}{{"nethttp", false}, {"fast", true}} {
		b.Run(c.name, func(b *testing.B) {
			srv, both := benchDaemon(b, 0)
			cred, child, _ := strings.Cut(both, "\x00")
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			hs := newHTTPServer(srv)
			if c.fast {
				fs := newFastServer(hs)
				go fs.Serve(ln)
				defer fs.Shutdown(b.Context())
			} else {
				go hs.Serve(ln)
				defer hs.Close()
			}
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			body := `{"name": "` + child + `", "version": "0.1.0"}`
			req := []byte("POST /spawn HTTP/1.1\r\nHost: roost\r\n" + HeaderCredential + ": " + cred +
				"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
			br := bufio.NewReaderSize(conn, 8<<10)
			ans := make([]byte, 0, 1024)
			exchange := func() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				n := -1
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						b.Fatal(err)
					}
					if len(line) == 2 {
						break
					}
					if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
						n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
					} else if bytes.HasPrefix(line, []byte("HTTP/1.1 ")) && !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
						b.Fatalf("answer %q", line)
					}
				}
				ans = ans[:n]
				if _, err := io.ReadFull(br, ans); err != nil {
					b.Fatal(err)
				}
			}
			exchange()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				exchange()
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			reportPercentiles(b, lat)
		})
	}
}
