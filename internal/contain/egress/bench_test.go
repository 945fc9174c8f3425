package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/murmur-go/murmur/internal/contain/egress"
)

// BenchmarkConnectDownload is a 100 MB download through a CONNECT tunnel,
// client, proxy and upstream all on loopback; MB/s is the figure.
func BenchmarkConnectDownload(b *testing.B) {
	const size = 100 << 20
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer up.Close()
	chunk := make([]byte, 1<<20)
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for sent := 0; sent < size; sent += len(chunk) {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(up.Addr().String())
	addr := proxy(b, egress.NewForTest([]string{"download.test"}, map[string]string{"download.test": "127.0.0.1"}))
	b.SetBytes(size)
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT download.test:%s HTTP/1.1\r\nHost: download.test:%s\r\n\r\n", port, port)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("CONNECT: %v %v", err, resp)
		}
		// The buffered reader may hold the first bytes; the rest come
		// straight off the connection.
		n, err := io.Copy(io.Discard, br)
		if err != nil || n != size {
			b.Fatalf("read %d of %d bytes: %v", n, size, err)
		}
		c.Close()
	}
}
