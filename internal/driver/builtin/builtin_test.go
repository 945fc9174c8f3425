package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/anthropic"
	"github.com/murmur-go/murmur/internal/driver/builtin"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
	fp "github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/driver/openai"
	"github.com/murmur-go/murmur/internal/driver/replay"
)

// TestProviderNames: builtin names the providers without importing them.
func TestProviderNames(t *testing.T) {
	if builtin.AnthropicName != anthropic.Name || builtin.OpenAIName != openai.Name {
		t.Errorf("builtin names %q %q, the drivers %q %q", builtin.AnthropicName, builtin.OpenAIName, anthropic.Name, openai.Name)
	}
	for _, n := range []string{anthropic.Name, openai.Name} {
		if !builtin.Provider(n) {
			t.Errorf("%s is not a provider", n)
		}
		if d, ok, err := builtin.New(driver.Config{Name: n, APIKey: "k"}); d != nil || ok || err != nil {
			t.Errorf("builtin.New(%s) = %v %v %v, want nothing: providers construct it", n, d, ok, err)
		}
	}
	if builtin.Provider(replay.Name) || builtin.Provider("acme/driver") {
		t.Error("replay or an unknown name is a provider")
	}
}

func TestNames(t *testing.T) {
	want := []string{"murmur/driver-anthropic", "murmur/driver-openai", "murmur/driver-replay"}
	got := builtin.Names()
	if len(got) != len(want) {
		t.Fatalf("names = %v", got)
	}
	for i := range want {
		if got[i] != want[i] || !builtin.Has(want[i]) {
			t.Errorf("names = %v, want %v", got, want)
		}
	}
	if builtin.Has("murmur/driver-deepseek") {
		t.Error("an unknown name is a built-in")
	}
	if _, ok, err := builtin.New(driver.Config{Name: "acme/driver"}); ok || err != nil {
		t.Errorf("unknown name: ok %v err %v", ok, err)
	}
}

// TestEachBuiltinAnswers constructs each built-in by name, at any version, and
// makes one call.
func TestEachBuiltinAnswers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte("version: 1\nresponses: [{content: [{type: text, text: hello}]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	an, oa := fp.NewAnthropic(), fp.NewOpenAI()
	defer an.Close()
	defer oa.Close()
	an.Push(fp.Reply{Text: []string{"hel", "lo"}})
	oa.Push(fp.Reply{Text: []string{"hel", "lo"}})
	for _, cfg := range []driver.Config{
		{Name: "murmur/driver-anthropic", Version: "0.19.0", Endpoint: an.URL, APIKey: "k", KeyVariable: "K"},
		{Name: "murmur/driver-openai", Version: "9.9.9", Endpoint: oa.URL, APIKey: "k", KeyVariable: "K"},
		{Name: "murmur/driver-replay", Version: "0.0.1", Dir: dir, Settings: map[string]any{"transcript": "t.yaml"}},
	} {
		d, ok, err := providers.New(cfg)
		if !ok || err != nil {
			t.Fatalf("%s: ok %v err %v", cfg.Name, ok, err)
		}
		if info := d.Info(); info.Name != cfg.Name || info.Version != cfg.Version || info.Implementation != "builtin" {
			t.Errorf("info = %+v", info)
		}
		resp, err := d.Call(context.Background(), &driver.Request{Model: "m", MaxTokens: 10,
			Messages: []driver.Message{{Role: "user", Content: []driver.Block{driver.TextBlock("hi")}}}}, nil)
		if err != nil || resp.Text() != "hello" {
			t.Errorf("%s: %+v %v", cfg.Name, resp, err)
		}
	}
}

func TestReplayNeedsATranscript(t *testing.T) {
	_, _, err := builtin.New(driver.Config{Name: replay.Name})
	if diag.Code(err) != replay.CodeUnreadable {
		t.Errorf("err = %v", err)
	}
}
