package doorapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// A new operator token has the form IsOperatorToken checks, and two are
// never the same.
func TestNewOperatorToken(t *testing.T) {
	a, err := doorapi.NewOperatorToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := doorapi.NewOperatorToken()
	if !doorapi.IsOperatorToken(a) || !doorapi.IsOperatorToken(b) || a == b || len(a) != len("mdt1.")+43 {
		t.Fatalf("tokens %q %q", a, b)
	}
	for _, s := range []string{"", "mdt1.", a[:len(a)-1], a + "A", a + "=", "mdt1." + strings.Repeat("+", 43), strings.Replace(a, "mdt1.", "MDT1.", 1)} {
		if doorapi.IsOperatorToken(s) {
			t.Errorf("%q is taken for an operator token", s)
		}
	}
}

// A Client with a Token presents it as Authorization: Bearer on every
// call, a2a-go's SendMessage included; one with none sends no header.
func TestClientPresentsItsToken(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, strings.Join(r.Header.Values("Authorization"), "|"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"unauthenticated","message":"no"}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	calls := func(c *doorapi.Client) {
		_, e1 := c.SendTask(ctx, doorapi.Task{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi")), Origin: doorapi.OriginDelegation})
		_, e2 := c.GetTask(ctx, "tsk_1")
		_, e3 := c.StopSession(ctx)
		// The door's refusal, whichever client sent the call.
		for _, err := range []error{e1, e2, e3} {
			var ref *doorapi.RefusalError
			if !errors.As(err, &ref) || ref.StatusCode != 401 || ref.Error() != "HTTP 401 unauthenticated: no" {
				t.Errorf("the refusal: %v", err)
			}
			if _, ok := doorapi.CodeOf(err); ok {
				t.Errorf("CodeOf(%v) reads a JSON-RPC answer", err)
			}
		}
	}
	c := doorapi.NewClient(doorapi.Endpoint(srv.URL), nil)
	c.Token = "mdt1.abc"
	calls(c)
	calls(doorapi.NewClient(doorapi.Endpoint(srv.URL), nil))
	want := []string{"Bearer mdt1.abc", "Bearer mdt1.abc", "Bearer mdt1.abc", "", "", ""}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Authorization headers %q, want %q", got, want)
	}
}
