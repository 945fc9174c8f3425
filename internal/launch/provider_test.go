package launch

import (
	"context"
	"io"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin"
	fp "github.com/murmur-go/murmur/internal/driver/fakeprovider"
)

// TestProviderBuild runs in both builds (go test, go test -tags murdriver):
// the plain build answers a provider built-in in this process; the split
// build refuses it with E-RUN-059, since no mur-driver lies beside the test
// binary, and ProviderProblem says so ahead of a run.
func TestProviderBuild(t *testing.T) {
	srv := fp.NewAnthropic()
	defer srv.Close()
	srv.Push(fp.Reply{Text: []string{"in ", "process"}, InputTokens: 2, OutputTokens: 2})
	cfg := driver.Config{Name: builtin.AnthropicName, Version: "1.0.0", Endpoint: srv.URL, APIKey: "k", KeyVariable: "K"}
	d, err := startProvider(cfg)
	problem := ProviderProblem(cfg.Name)
	switch ProviderBuild {
	case "in-process":
		if err != nil || problem != nil {
			t.Fatalf("the plain build: start %v, problem %v", err, problem)
		}
		if c, ok := d.(io.Closer); ok {
			defer c.Close()
		}
		resp, err := d.Call(context.Background(), &driver.Request{Model: "m", MaxTokens: 10,
			Messages: []driver.Message{{Role: "user", Content: []driver.Block{driver.TextBlock("hi")}}}}, nil)
		if err != nil || resp.Text() != "in process" {
			t.Fatalf("call: %v %+v", err, resp)
		}
		if info := d.Info(); info.Name != cfg.Name || info.Implementation != driver.ImplementationBuiltin {
			t.Errorf("info %+v", info)
		}
	case "murdriver":
		if diag.Code(err) != "E-RUN-059" || diag.Code(problem) != "E-RUN-059" {
			t.Fatalf("the split build without its helper: start %v, problem %v", err, problem)
		}
		if len(srv.Requests()) != 0 {
			t.Error("a request reached the provider")
		}
	default:
		t.Fatalf("ProviderBuild %q is neither in-process nor murdriver", ProviderBuild)
	}
}
