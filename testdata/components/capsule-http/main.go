//go:build wasip1

// Command capsule-http is a Go-kit test fixture: a script capsule that makes its own
// HTTP request through wasi:http/outgoing-handler@0.2.12#handle, with a small
// hand-written binding (Go's wasip1 standard library has no HTTP client). Its task's
// first line is "http URL" (scheme http or https); it builds a GET request for URL,
// hands it to the host and writes what came back to out/result.txt:
//
//	http: sent (future-incoming-response)     the host accepted the request
//	http: error-code <name>                   the host refused it (for example HTTP-request-denied)
//	http: <step> failed                       a request setter returned err
//
// It stops at handle's answer: reading the response would need the wasi:io streams
// and pollables the host does not grant to capsules yet.
package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Capsule(run) }

func main() {}

//go:wasmimport wasi:http/types@0.2.12 [constructor]fields
func newFields() uint32

//go:wasmimport wasi:http/types@0.2.12 [constructor]outgoing-request
func newOutgoingRequest(headers uint32) uint32

// set-scheme(self, option<scheme>) -> result: option disc, scheme disc, other's (ptr, len).
//
//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.set-scheme
func setScheme(req, some, scheme, ptr, n uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.set-authority
func setAuthority(req, some, ptr, n uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.set-path-with-query
func setPathWithQuery(req, some, ptr, n uint32) uint32

// handle(request, option<request-options>) -> result<future-incoming-response, error-code>,
// written to a 40-byte, 8-aligned return area: disc u8 at 0, payload at 8.
//
//go:wasmimport wasi:http/outgoing-handler@0.2.12 handle
func handle(req, optSome, opt, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [resource-drop]future-incoming-response
func dropFutureResponse(h uint32)

// errorCodes are wasi:http/types error-code's cases, in WIT order.
var errorCodes = strings.Fields(`DNS-timeout DNS-error destination-not-found destination-unavailable
destination-IP-prohibited destination-IP-unroutable connection-refused connection-terminated
connection-timeout connection-read-timeout connection-write-timeout connection-limit-reached
TLS-protocol-error TLS-certificate-error TLS-alert-received HTTP-request-denied
HTTP-request-length-required HTTP-request-body-size HTTP-request-method-invalid
HTTP-request-URI-invalid HTTP-request-URI-too-long HTTP-request-header-section-size
HTTP-request-header-size HTTP-request-trailer-section-size HTTP-request-trailer-size
HTTP-response-incomplete HTTP-response-header-section-size HTTP-response-header-size
HTTP-response-body-size HTTP-response-trailer-section-size HTTP-response-trailer-size
HTTP-response-transfer-coding HTTP-response-content-coding HTTP-response-timeout
HTTP-upgrade-failed HTTP-protocol-error loop-detected configuration-error internal-error`)

func ptr(s string) uint32 {
	if s == "" {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(task, "\n")
	words := strings.Fields(line)
	if len(words) != 2 || words[0] != "http" {
		return errors.New(`task: want "http URL"`)
	}
	u, err := url.Parse(words[1])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("task: %q is not an http(s) URL", words[1])
	}
	out := request(u)
	if err := os.MkdirAll("out", 0o755); err != nil {
		return err
	}
	return os.WriteFile("out/result.txt", []byte("http: "+out+"\n"), 0o644)
}

func request(u *url.URL) string {
	req := newOutgoingRequest(newFields())
	scheme := uint32(0) // HTTP
	if u.Scheme == "https" {
		scheme = 1
	}
	if setScheme(req, 1, scheme, 0, 0) != 0 {
		return "set-scheme failed"
	}
	host, path := u.Host, u.RequestURI()
	if setAuthority(req, 1, ptr(host), uint32(len(host))) != 0 {
		return "set-authority failed"
	}
	if setPathWithQuery(req, 1, ptr(path), uint32(len(path))) != 0 {
		return "set-path-with-query failed"
	}
	var ret [5]uint64 // 40 bytes, 8-aligned
	handle(req, 0, 0, uint32(uintptr(unsafe.Pointer(&ret[0]))))
	runtime.KeepAlive(host)
	runtime.KeepAlive(path)
	area := unsafe.Slice((*byte)(unsafe.Pointer(&ret[0])), 40)
	if area[0] == 0 {
		dropFutureResponse(uint32(ret[1]))
		return "sent (future-incoming-response)"
	}
	if c := int(area[8]); c < len(errorCodes) {
		return "error-code " + errorCodes[c]
	}
	return fmt.Sprintf("error-code %d", area[8])
}
