package wit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp"
)

// http.wat builds GET https://blocked.example.com/secret?x=1 and returns 1
// for HTTP-request-denied, 0 for a future.
func TestGrantHTTPPolicy(t *testing.T) {
	const url = "https://blocked.example.com/secret?x=1"
	cases := []struct {
		name    string
		policy  HTTPPolicy
		want    uint32
		logLine string
	}{
		{"denied", func(context.Context, *wasihttp.Request) error { return errors.New("not in the allowlist") },
			1, "wasi:http request denied"},
		{"deny all (nil policy)", nil, 1, "reason=\"outbound HTTP is not granted\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			var seen []wasihttp.Request
			policy := c.policy
			if policy != nil {
				policy = func(ctx context.Context, req *wasihttp.Request) error {
					seen = append(seen, *req)
					return c.policy(ctx, req)
				}
			}
			h := wasmhost.NewHost()
			GrantHTTP(h, policy, slog.New(slog.NewTextHandler(&logBuf, nil)))
			v, err := instantiate(t, "http.wat", h).Call(bg, "", "attempt")
			if err != nil {
				t.Fatal(err)
			}
			if v != c.want {
				t.Fatalf("attempt = %v, want %d", v, c.want)
			}
			if policy != nil && (len(seen) != 1 || seen[0].URL() != url || seen[0].Method != "GET") {
				t.Fatalf("policy saw %+v", seen)
			}
			if log := logBuf.String(); strings.Count(log, "\n") != 1 || !strings.Contains(log, c.logLine) || !strings.Contains(log, url) {
				t.Fatalf("log: %s", log)
			}
		})
	}
}
