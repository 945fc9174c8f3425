package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/anthropic"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
	fp "github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/driver/openai"
	"github.com/murmur-go/murmur/internal/driver/remote"
	"github.com/murmur-go/murmur/internal/testbin"
)

func helper(t *testing.T) string { return testbin.Path(t, "./cmd/mur-driver") }

func hi() *driver.Request {
	return &driver.Request{Model: "m", MaxTokens: 10,
		Messages: []driver.Message{{Role: "user", Content: []driver.Block{driver.TextBlock("hi")}}}}
}

// TestProvidersThroughTheHelper: each provider built-in answers through the
// real helper process as it does in-process: the info, the streamed chunks
// in order, the text, the tool call and the usage.
func TestProvidersThroughTheHelper(t *testing.T) {
	for _, c := range []struct {
		name string
		srv  *fp.Server
	}{{anthropic.Name, fp.NewAnthropic()}, {openai.Name, fp.NewOpenAI()}} {
		t.Run(c.name, func(t *testing.T) {
			defer c.srv.Close()
			c.srv.Push(fp.Reply{Text: []string{"hel", "lo"}, InputTokens: 3, OutputTokens: 2},
				fp.Reply{ToolCalls: []fp.ToolCall{{ID: "t1", Name: "echo", Pieces: []string{`{"a"`, `:1}`}}}, Stop: "tool_call"})
			d, err := remote.Start(helper(t), driver.Config{Name: c.name, Version: "9.9.9", Endpoint: c.srv.URL, APIKey: "k", KeyVariable: "K"})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if info := d.Info(); info.Name != c.name || info.Version != "9.9.9" || info.Implementation != driver.ImplementationBuiltin {
				t.Errorf("info = %+v", info)
			}
			var chunks []string
			resp, err := d.Call(context.Background(), hi(), func(s string) { chunks = append(chunks, s) })
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != "hello" || strings.Join(chunks, "|") != "hel|lo" || resp.StopReason != driver.StopEndTurn {
				t.Errorf("resp %+v chunks %q", resp, chunks)
			}
			if resp.Usage == nil || resp.Usage.InputTokens != 3 || resp.Usage.OutputTokens != 2 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			resp, err = d.Call(context.Background(), hi(), nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.ToolCalls()
			if resp.StopReason != driver.StopToolCall || len(calls) != 1 || calls[0].Name != "echo" || string(calls[0].Input) != `{"a":1}` {
				t.Errorf("resp = %+v", resp)
			}
		})
	}
}

// TestErrorsKeepTheirKind: a failed call comes back with the kind, status,
// message and cause text it had in the helper, and a constructor's
// diagnostic with its code and hint.
func TestErrorsKeepTheirKind(t *testing.T) {
	srv := fp.NewAnthropic()
	defer srv.Close()
	srv.Push(fp.Reply{Status: 401, Message: "bad key"}, fp.Reply{RedirectTo: "http://127.0.0.1:1/x"})
	d, err := remote.Start(helper(t), driver.Config{Name: anthropic.Name, Endpoint: srv.URL, APIKey: "k", KeyVariable: "MY_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.Call(context.Background(), hi(), nil)
	var de *driver.Error
	if !errors.As(err, &de) || de.Kind != driver.KindKeyRefused || de.Status != 401 || !errors.Is(err, driver.ErrKeyRefused) ||
		!strings.Contains(err.Error(), "MY_KEY") {
		t.Errorf("401: %#v", err)
	}
	_, err = d.Call(context.Background(), hi(), nil)
	if !errors.Is(err, driver.ErrRedirect) {
		t.Errorf("redirect: %v is not ErrRedirect", err)
	}

	_, err = remote.Start(helper(t), driver.Config{Name: anthropic.Name, Endpoint: srv.URL})
	var dg *diag.Diagnostic
	if !errors.As(err, &dg) || dg.Code != anthropic.CodeNoKey || dg.Hint == "" {
		t.Errorf("no key: %#v", err)
	}
}

// TestCancelAndConcurrency: a call whose context ends returns the protocol's
// canceled error (a deadline stays a deadline) while the helper keeps
// serving; calls overlap.
func TestCancelAndConcurrency(t *testing.T) {
	srv := fp.NewOpenAI()
	defer srv.Close()
	srv.Push(fp.Reply{Hang: true})
	d, err := remote.Start(helper(t), driver.Config{Name: openai.Name, Endpoint: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = d.Call(ctx, hi(), nil)
	if driver.KindOf(err) != driver.KindCanceled || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: %v", err)
	}
	const n = 8
	for i := 0; i < n; i++ {
		srv.Push(fp.Reply{Text: []string{"ok"}})
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := d.Call(context.Background(), hi(), nil)
			if err == nil && resp.Text() != "ok" {
				err = errors.New("text " + resp.Text())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestHelperGone: a helper that dies fails the call in flight and every later
// one as unreachable, never hangs.
func TestHelperGone(t *testing.T) {
	srv := fp.NewAnthropic()
	defer srv.Close()
	srv.Push(fp.Reply{Hang: true})
	d, err := remote.Start(helper(t), driver.Config{Name: anthropic.Name, Endpoint: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	go func() {
		for srv.Pending() != 0 {
			time.Sleep(5 * time.Millisecond)
		}
		remote.Kill(d)
	}()
	if _, err := d.Call(context.Background(), hi(), nil); driver.KindOf(err) != driver.KindUnreachable {
		t.Errorf("in flight: %v", err)
	}
	if _, err := d.Call(context.Background(), hi(), nil); driver.KindOf(err) != driver.KindUnreachable {
		t.Errorf("after: %v", err)
	}
}

// TestFindAndStamp: a missing helper is a coded refusal naming where it was
// looked for; a helper of another build refuses the hello and mur says so.
func TestFindAndStamp(t *testing.T) {
	dir := t.TempDir()
	_, err := remote.Find(filepath.Join(dir, "mur"), anthropic.Name)
	if diag.Code(err) != remote.CodeHelper || !strings.Contains(err.Error(), filepath.Join(dir, "mur-driver")) {
		t.Errorf("missing: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mur-driver"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := remote.Find(filepath.Join(dir, "mur"), anthropic.Name); err != nil || p != filepath.Join(dir, "mur-driver") {
		t.Errorf("present: %q %v", p, err)
	}

	// The helper's side, in process: another stamp is refused with CodeHelper.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- remote.Serve(inR, outW, func(driver.Config) (driver.Driver, error) {
			t.Error("constructed a driver for another build")
			return nil, nil
		})
		outW.Close()
	}()
	go json.NewEncoder(inW).Encode(map[string]any{"stamp": "protocol 0 elsewhere", "config": map[string]any{"Name": anthropic.Name}})
	line, _ := bufio.NewReader(outR).ReadString('\n')
	if !strings.Contains(line, remote.CodeHelper) || !strings.Contains(line, "protocol 0 elsewhere") {
		t.Errorf("answer = %q", line)
	}
	if err := <-done; err == nil {
		t.Error("Serve accepted another stamp")
	}
	inW.Close()
}

// BenchmarkTurn is one streamed turn against a fake provider on loopback,
// made by the built-in in this process and through the helper: the
// difference is what the pipe costs a turn.
func BenchmarkTurn(b *testing.B) {
	srv := fp.NewAnthropic()
	defer srv.Close()
	cfg := driver.Config{Name: anthropic.Name, Endpoint: srv.URL, APIKey: "k"}
	reply := fp.Reply{Text: []string{"one ", "two ", "three"}, InputTokens: 10, OutputTokens: 3}
	inproc, _, err := providers.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	helped, err := remote.Start(testbin.Path(b, "./cmd/mur-driver"), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer helped.Close()
	for _, c := range []struct {
		name string
		d    driver.Driver
	}{{"in-process", inproc}, {"helper", helped}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				srv.Push(reply)
				if _, err := c.d.Call(context.Background(), hi(), func(string) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParamsKeepTheirNumbers: a request's params reach the provider's body as
// mur had them, through two JSON hops: an integer past 2^53 stays exact, a
// float and a string stay what they were.
func TestParamsKeepTheirNumbers(t *testing.T) {
	srv := fp.NewOpenAI()
	defer srv.Close()
	srv.Push(fp.Reply{Text: []string{"ok"}})
	d, err := remote.Start(helper(t), driver.Config{Name: openai.Name, Endpoint: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	req := hi()
	req.Params = map[string]any{"seed": int64(9007199254740993), "temperature": 0.25, "user": "u"}
	if _, err := d.Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := string(reqs[0].Body)
	for _, want := range []string{`"seed":9007199254740993`, `"temperature":0.25`, `"user":"u"`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s: %s", want, body)
		}
	}
}
