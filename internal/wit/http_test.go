package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestHTTPDenied(t *testing.T) {
	var logBuf bytes.Buffer
	var seen []HTTPRequest
	h := NewHost()
	h.HTTP(func(ctx context.Context, req HTTPRequest) error {
		seen = append(seen, req)
		return errors.New("not in the allowlist")
	}, slog.New(slog.NewTextHandler(&logBuf, nil)))
	i := instantiate(t, "http.wat", RunConfig{Host: h})
	v, err := i.Call(bg, "", "attempt")
	if err != nil {
		t.Fatal(err)
	}
	if v != uint32(1) {
		t.Fatalf("attempt = %v, want 1 (HTTP-request-denied)", v)
	}
	if len(seen) != 1 || seen[0].URL() != "https://blocked.example.com/secret?x=1" || seen[0].Method != "GET" {
		t.Fatalf("policy saw %+v", seen)
	}
	if !strings.Contains(logBuf.String(), "wasi:http request denied") ||
		!strings.Contains(logBuf.String(), "https://blocked.example.com/secret?x=1") {
		t.Fatalf("log: %s", logBuf.String())
	}
}

func TestHTTPAllowedButNoEgress(t *testing.T) {
	h := NewHost()
	h.HTTP(func(context.Context, HTTPRequest) error { return nil }, slog.New(slog.DiscardHandler))
	i := instantiate(t, "http.wat", RunConfig{Host: h})
	if v, err := i.Call(bg, "", "attempt"); err != nil || v != uint32(2) {
		t.Fatalf("attempt = %v, %v; want 2 (internal-error)", v, err)
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
