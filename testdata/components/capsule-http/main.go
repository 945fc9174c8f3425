//go:build wasip1

// Command capsule-http is a Go-kit test fixture: a script capsule that makes HTTP
// requests through the kit's wasi:http client (wasihttp.Transport). Each line of
// its task is one request:
//
//	METHOD URL [BODY-BYTES [chunked|length]] [trailer] [drop] [H:NAME:VALUE...]
//
// "drop" closes the response body unread; H:NAME:VALUE adds a request header
// as given (percent-escapes decoded) (unchecked, so the host's checks are what a bad one meets).
// A METHOD written with a leading "-" (-GET) reads the response body into
// io.Discard and reports only status and bytes (for benchmarks: hashing in
// the guest would dominate them); with a leading "~" (~GET) it does the same
// and also reports ns=N, the request's time as the guest measured it (from
// sending it to the body's end), for benchmarks' percentiles. A leading "^"
// (^GET, ^~GET) makes the request through the kit's net/http-free client
// (guest/httpcore) instead of wasihttp.Transport, with the same result line;
// its errors have no net/http prefix ("error wasi:http: ...").
//
// BODY-BYTES of the byte pattern 0..250 are sent (with a content-length unless
// "chunked"), with a request trailer x-sent: BODY-BYTES when "trailer" is given.
// For each request it appends to out/result.txt one line:
//
//	status=N bytes=N sum=HEX8 x-echo=V trailer=V     the response
//	error <text>                                      the request failed (for example
//	                                                  wasi:http: HTTP-request-denied)
package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/murmur-go/murmur/guest"
	"github.com/murmur-go/murmur/guest/httpcore"
	"github.com/murmur-go/murmur/guest/wasihttp"
)

func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return err
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(task), "\n") {
		out.WriteString(request(strings.Fields(line)) + "\n")
	}
	if err := os.MkdirAll("out", 0o755); err != nil {
		return err
	}
	return os.WriteFile("out/result.txt", []byte(out.String()), 0o644)
}

func request(w []string) string {
	if len(w) < 2 {
		return "error: want METHOD URL [BODY-BYTES [chunked|length]] [trailer] [drop] [H:NAME:VALUE...]"
	}
	var body io.Reader
	var raw []byte
	n := 0
	chunked, trailer, drop := false, false, false
	hdr := [][2]string{}
	for _, x := range w[2:] {
		switch {
		case x == "chunked":
			chunked = true
		case x == "length":
		case x == "trailer":
			trailer = true
		case x == "drop":
			drop = true
		case strings.HasPrefix(x, "H:"):
			k, v, _ := strings.Cut(x[2:], ":")
			k, _ = url.PathUnescape(k)
			v, _ = url.PathUnescape(v)
			hdr = append(hdr, [2]string{k, v})
		default:
			n, _ = strconv.Atoi(x)
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(i % 251)
			}
			body, raw = bytes.NewReader(b), b
		}
	}
	if m, ok := strings.CutPrefix(w[0], "^"); ok {
		return lean(m, w[1], hdr, raw, chunked, trailer, drop)
	}
	if body != nil && chunked {
		body = io.MultiReader(body) // hides the length: sent chunked
	}
	timed := strings.HasPrefix(w[0], "~")
	discard := timed || strings.HasPrefix(w[0], "-")
	req, err := http.NewRequest(strings.TrimLeft(w[0], "-~"), w[1], body)
	if err != nil {
		return "error " + err.Error()
	}
	for _, h := range hdr {
		req.Header[h[0]] = append(req.Header[h[0]], h[1]) // unchecked: the host judges it
	}
	if trailer {
		req.Trailer = http.Header{"X-Sent": {strconv.Itoa(n)}}
	}
	c := &http.Client{
		Transport:     wasihttp.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return "error " + err.Error()
	}
	defer resp.Body.Close()
	if drop {
		return fmt.Sprintf("status=%d dropped", resp.StatusCode)
	}
	if discard {
		got, err := io.Copy(io.Discard, resp.Body)
		if timed {
			return fmt.Sprintf("status=%d bytes=%d err=%v ns=%d", resp.StatusCode, got, err, time.Since(start).Nanoseconds())
		}
		return fmt.Sprintf("status=%d bytes=%d err=%v", resp.StatusCode, got, err)
	}
	h := sha256.New()
	got, err := io.Copy(h, resp.Body)
	if err != nil {
		return fmt.Sprintf("status=%d bytes=%d error %v", resp.StatusCode, got, err)
	}
	return fmt.Sprintf("status=%d bytes=%d sum=%x x-echo=%s trailer=%s", resp.StatusCode, got, h.Sum(nil)[:4],
		resp.Header.Get("X-Echo"), resp.Trailer.Get("X-Sum"))
}

// lean makes the request through guest/httpcore and reports it as request
// does: with httpcore.Do when the body is sent whole with its length, else
// with an httpcore.Request (a chunked body, a trailer).
func lean(method, url string, hdr [][2]string, body []byte, chunked, trailer, drop bool) string {
	timed := strings.HasPrefix(method, "~")
	discard := timed || strings.HasPrefix(method, "-")
	method = strings.TrimLeft(method, "-~")
	start := time.Now()
	var resp *httpcore.Response
	var err error
	if !chunked && !trailer {
		resp, err = httpcore.Do(method, url, hdr, body)
	} else {
		var req *httpcore.Request
		if req, err = httpcore.NewRequest(method, url, hdr); err == nil {
			if body != nil {
				req.Body = io.MultiReader(bytes.NewReader(body))
				if !chunked {
					req.ContentLength = int64(len(body))
				}
			}
			if trailer {
				req.Trailer = func() [][2]string { return [][2]string{{"x-sent", strconv.Itoa(len(body))}} }
			}
			resp, err = req.Send()
		}
	}
	if err != nil {
		return "error " + err.Error()
	}
	defer resp.Body.Close()
	if drop {
		return fmt.Sprintf("status=%d dropped", resp.Status)
	}
	if discard {
		got, err := io.Copy(io.Discard, resp.Body)
		if timed {
			return fmt.Sprintf("status=%d bytes=%d err=%v ns=%d", resp.Status, got, err, time.Since(start).Nanoseconds())
		}
		return fmt.Sprintf("status=%d bytes=%d err=%v", resp.Status, got, err)
	}
	h := sha256.New()
	got, err := io.Copy(h, resp.Body)
	if err != nil {
		return fmt.Sprintf("status=%d bytes=%d error %v", resp.Status, got, err)
	}
	echo, _ := resp.Get("x-echo")
	sum := ""
	for _, f := range resp.Trailer() {
		if strings.EqualFold(f[0], "x-sum") {
			sum = f[1]
		}
	}
	return fmt.Sprintf("status=%d bytes=%d sum=%x x-echo=%s trailer=%s", resp.Status, got, h.Sum(nil)[:4], echo, sum)
}
