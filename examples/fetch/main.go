//go:build wasip1

// Command fetch is the example capsule that reaches the network: it GETs the URL its
// task names (https://example.com/ when the task is empty) through the guest kit's
// wasi:http client and writes the status, the content type and the body's first
// line to out/result.txt. A URL its manifest's capabilities.network.allow does not
// cover is refused by the host before any connection; the capsule reports that too.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/murmur-go/murmur/guest"
	"github.com/murmur-go/murmur/guest/wasihttp"
)

func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return fmt.Errorf("read the task: %w", err)
	}
	url := strings.TrimSpace(task)
	if url == "" {
		url = "https://example.com/"
	}
	if err := os.MkdirAll("out", 0o755); err != nil {
		return err
	}
	return os.WriteFile("out/result.txt", []byte(fetch(url)+"\n"), 0o644)
}

func fetch(url string) string {
	resp, err := wasihttp.Get(url)
	if err != nil {
		var he *wasihttp.Error
		if errors.As(err, &he) && he.Code == "HTTP-request-denied" {
			return url + ": refused: capabilities.network.allow does not cover it"
		}
		return url + ": " + err.Error()
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Sprintf("%s: %s, reading the body: %v", url, resp.Status, err)
	}
	return fmt.Sprintf("%s: %s, %s, first line %q", url, resp.Status, resp.Header.Get("Content-Type"), strings.TrimSpace(line))
}
