package openai_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver"
)

// A compatible server that ignores "stream": true and answers with one JSON
// chat.completion gets an error that says the driver needs streaming, not
// that a stream ended without a finish_reason.
func TestServerThatDoesNotStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer srv.Close()
	_, _, err := call(t, newDriver(t, srv.URL), request(), 10*time.Second)
	var de *driver.Error
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `answered with "application/json", not a stream`) ||
		!strings.Contains(err.Error(), "needs an OpenAI-compatible server that streams chat completions") {
		t.Fatalf("err = %v, want one saying the driver needs streaming", err)
	}
}
