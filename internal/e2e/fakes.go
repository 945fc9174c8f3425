package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Fake providers and collectors: the model a test scripts turn by turn, and
// the OTLP collector spans are posted to.

// FakeProvider is the one fake-provider setup: a loopback server speaking
// protocol's wire format (fakeprovider.Anthropic or fakeprovider.OpenAI),
// closed when the test ends. Push replies onto it; point a capsule at it
// with ProviderArtifact or FakeModelCapsule.
func FakeProvider(t testing.TB, protocol fakeprovider.Protocol) *fakeprovider.Server {
	t.Helper()
	var fp *fakeprovider.Server
	switch protocol {
	case fakeprovider.Anthropic:
		fp = fakeprovider.NewAnthropic()
	case fakeprovider.OpenAI:
		fp = fakeprovider.NewOpenAI()
	default:
		t.Fatalf("no fake provider speaks protocol %d", protocol)
	}
	t.Cleanup(fp.Close)
	return fp
}

// ProviderArtifact is the manifest's artifacts entry for a provider driver
// (a built-in such as murmur/driver-anthropic, or a published one) whose
// gateway is endpoint, with apiKey (a literal, or ${VAR} read from the run's
// environment). It is indented to sit under artifacts:.
func ProviderArtifact(driver, endpoint, apiKey string) string {
	return "  - name: " + driver + `
    version: 1.0.0
    runtime: driver
    gateway:
      endpoint: ` + endpoint + `
      api_key: ` + apiKey + "\n"
}

// OTLPReceiver is a real OTLP/HTTP endpoint that decodes each protobuf
// ExportTraceServiceRequest and keeps the span names and attributes.
type OTLPReceiver struct {
	Mu    sync.Mutex
	Spans []*tracepb.Span
}

func (o *OTLPReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", 400)
		return
	}
	o.Mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.Spans = append(o.Spans, ss.Spans...)
		}
	}
	o.Mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// FakeModelCapsule writes and publishes an agent capsule on
// murmur/driver-anthropic pointed at fp (its key is ${PROVIDER_TEST_KEY}:
// run it with FakeKey in its environment), so a test scripts its model turn by
// turn and reads what the model was sent (tool results, continuations).
func FakeModelCapsule(t *testing.T, homeDir, dir, name, version, extra string, fp *fakeprovider.Server) string {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	m := "name: " + name + "\nversion: " + version + "\nartifacts:\n" +
		ProviderArtifact("murmur/driver-anthropic", fp.URL, "${PROVIDER_TEST_KEY}") + `inference:
  model: claude-test
  driver:
    artifact: murmur/driver-anthropic
` + extra
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(m), 0o644)
	PublishDir(t, homeDir, dir)
	return dir
}

// FakeKey is the environment a FakeModelCapsule runs with.
const FakeKey = "PROVIDER_TEST_KEY=test-key"

// DelegateReply is a model reply calling delegate-task once per capsule.
func DelegateReply(version, task string, capsules ...string) fakeprovider.Reply {
	var r fakeprovider.Reply
	for i, c := range capsules {
		in, _ := json.Marshal(map[string]string{"capsule": c, "version": version, "task": task})
		r.ToolCalls = append(r.ToolCalls, fakeprovider.ToolCall{ID: "call_" + strconv.Itoa(i+1), Name: "delegate-task", Pieces: []string{string(in)}})
	}
	return r
}

// LastMessageText is every "text" string in an Anthropic request's last message, in
// order: a tool result's or a continuation's text.
func LastMessageText(t *testing.T, req fakeprovider.Request) string {
	t.Helper()
	msgs, _ := req.JSON()["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("request has no messages: %s", req.Body)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["text"].(string); ok {
				out = append(out, s)
			}
			if s, ok := x["content"].(string); ok {
				out = append(out, s)
			}
			for k, e := range x {
				if k != "text" {
					walk(e)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(msgs[len(msgs)-1])
	return strings.Join(out, "\n")
}
