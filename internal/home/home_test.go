package home

import (
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

func TestFromEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
		code string
	}{
		{map[string]string{"HOME": "/home/a"}, "/home/a", ""},
		{map[string]string{"HOME": "/home/a/../b/"}, "/home/b", ""},
		{map[string]string{"HOME": "relhome"}, "", "E-IO-003"},
		{map[string]string{"HOME": ""}, "", "E-IO-003"},
		{map[string]string{}, "", "E-IO-003"},
	}
	for _, tc := range tests {
		got, err := FromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if got != tc.want || diag.Code(err) != tc.code {
			t.Errorf("FromEnv(%v) = %q, %v; want %q, %s", tc.env, got, err, tc.want, tc.code)
		}
	}
	_, err := FromEnv(func(string) (string, bool) { return "relhome", true })
	if !strings.Contains(err.Error(), "relhome") {
		t.Errorf("the message should name the bad value: %v", err)
	}
}

func TestLayout(t *testing.T) {
	h := "/h"
	for got, want := range map[string]string{
		Artifacts(h):               "/h/.murmur/artifacts",
		Compiled(h):                "/h/.murmur/compiled",
		CacheKey(h):                "/h/.murmur/keys/compiled.key",
		Records(h):                 "/h/.murmur/records",
		ProjectRecords(h, "/p/q/"): "/h/.murmur/records/p/q",
		Sessions(h):                "/h/.murmur/sessions",
		Runtime(h, "s1"):           "/h/.murmur/sessions/s1/runtime",
		Running(h):                 "/h/.murmur/running",
		Spend(h):                   "/h/.murmur/spend",
		ProjectArtifacts("/p"):     "/p/.murmur/artifacts",
		State(h):                   "/h/.murmur/state",
		StateStore(h, "notes"):     "/h/.murmur/state/notes",
		StateLock(h, "notes"):      "/h/.murmur/state/notes.lock",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
