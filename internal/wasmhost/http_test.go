package wasmhost

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestHTTPDecision: handle hands the guest's request to Host.HTTP's decide
// and answers by its verdict (http.wat returns 1 for HTTP-request-denied, 2
// for another error, 0 for a future); nil decide denies.
func TestHTTPDecision(t *testing.T) {
	cases := []struct {
		name   string
		decide func(context.Context, *HTTPRequest) error
		want   uint32
	}{
		{"denied", func(context.Context, *HTTPRequest) error { return errors.New("no") }, 1},
		{"nil denies", nil, 1},
		{"allowed: a future", func(context.Context, *HTTPRequest) error { return nil }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var seen []HTTPRequest
			decide := c.decide
			if decide != nil {
				decide = func(ctx context.Context, req *HTTPRequest) error {
					seen = append(seen, *req)
					return c.decide(ctx, req)
				}
			}
			h := NewHost()
			h.HTTP(HTTPGrant{Decide: decide, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
			i := instantiate(t, "http.wat", RunConfig{Host: h})
			v, err := i.Call(bg, "", "attempt")
			if err != nil || v != c.want {
				t.Fatalf("attempt = %v, %v; want %d", v, err, c.want)
			}
			if decide != nil && (len(seen) != 1 || seen[0].URL() != "https://blocked.example.com/secret?x=1" || seen[0].Method != "GET") {
				t.Fatalf("decide saw %+v", seen)
			}
		})
	}
}
func TestHTTPNotGranted(t *testing.T) {
	i := instantiate(t, "http.wat", RunConfig{Host: NewHost()})
	_, err := i.Call(bg, "", "attempt")
	te := asTrap(t, err)
	if te.Message != "capability not granted: wasi:http/types@0.2.9#[constructor]fields" {
		t.Fatalf("message %q", te.Message)
	}
}

func TestResourceFromAnotherInstanceRefused(t *testing.T) {
	var captured *Resource
	h := NewHost()
	h.Define("wasi:http/types", "[constructor]fields", func(ctx context.Context, a []Value) (Value, error) {
		if captured != nil {
			return captured, nil // a handle of the first instance's store
		}
		return HostResource{Rep: 7}, nil
	})
	h.Define("wasi:http/types", "[constructor]outgoing-request", func(ctx context.Context, a []Value) (Value, error) {
		res := a[0].(*Resource)
		if rep, ok := res.HostRep(); !ok || rep != 7 {
			t.Errorf("HostRep = %d, %v", rep, ok)
		}
		captured = res
		return nil, errors.New("stop here")
	})
	first := instantiate(t, "http.wat", RunConfig{Host: h})
	if _, err := first.Call(bg, "", "attempt"); !strings.Contains(err.Error(), "stop here") {
		t.Fatalf("first: %v", err)
	}
	second := instantiate(t, "http.wat", RunConfig{Host: h})
	_, err := second.Call(bg, "", "attempt")
	if te := asTrap(t, err); !strings.Contains(te.Message, "belongs to another instance") {
		t.Fatalf("second: %v", err)
	}
}

// TestSpoolHelperCompiles: the stream helper's WAT is valid against
// wasip2's filesystem and io types (a mistyped import fails at link time).
func TestSpoolHelperCompiles(t *testing.T) {
	if _, err := testEngine.spoolHelperComponent(); err != nil {
		t.Fatal(err)
	}
}
