package egress_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/contain/egress"
)

// lockedBuffer is a bytes.Buffer safe for the proxy's handler goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A proxy given a logger logs its decisions there, not to slog.Default()
// (mur's stderr), and counts its refusals for the session's summary line.
func TestProxyLogsToItsLogger(t *testing.T) {
	_, port := upstream(t)
	var def lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	defer slog.SetDefault(prev)

	var log lockedBuffer
	p := egress.NewForTest([]string{"allowed.test"}, map[string]string{"allowed.test": "127.0.0.1"})
	p.SetLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	addr := proxy(t, p)
	if code, _ := ask(t, addr, get("allowed.test:"+port, "allowed.test"), false); code != 200 {
		t.Fatalf("allowed GET: %d", code)
	}
	for _, target := range []string{"denied.test:" + port, "denied.test:443"} {
		if code, _ := ask(t, addr, connect(target), true); code != 403 {
			t.Fatalf("CONNECT %s: %d, want 403", target, code)
		}
	}
	if n := p.Refused(); n != 2 {
		t.Errorf("Refused() = %d, want 2", n)
	}
	got := log.String()
	if strings.Count(got, "msg=deny") != 2 || !strings.Contains(got, "target=denied.test:443") ||
		!strings.Contains(got, "key=capabilities.network.allow") || !strings.Contains(got, "msg=allow") {
		t.Errorf("the proxy's log:\n%s", got)
	}
	if def.String() != "" {
		t.Errorf("the default logger (mur's stderr) got:\n%s", def.String())
	}
}
