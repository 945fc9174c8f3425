package wasmhost

import (
	"strings"
	"testing"
	"time"
)

// TestLimitsRequired: the engine has no defaults, and a zero limit is never
// read as "unlimited": Instantiate refuses it, naming the field.
func TestLimitsRequired(t *testing.T) {
	full := fullLimits(Limits{})
	cases := []struct {
		field string
		set   func(*Limits)
	}{
		{"MemoryBytes", func(l *Limits) { l.MemoryBytes = 0 }},
		{"TableElements", func(l *Limits) { l.TableElements = 0 }},
		{"Instances", func(l *Limits) { l.Instances = -1 }},
		{"Memories", func(l *Limits) { l.Memories = 0 }},
		{"Tables", func(l *Limits) { l.Tables = 0 }},
		{"Deadline", func(l *Limits) { l.Deadline = 0 }},
		{"Grace", func(l *Limits) { l.Grace = -time.Second }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			l := full
			c.set(&l)
			i, err := testEngine.Instantiate(bg, fixture(t, "basic.wat"), RunConfig{Limits: l})
			if err == nil {
				i.Close()
				t.Fatal("instantiated with a missing limit")
			}
			if !strings.Contains(err.Error(), "Limits."+c.field+" is ") {
				t.Fatalf("error %q does not name %s", err, c.field)
			}
		})
	}
	i, err := testEngine.Instantiate(bg, fixture(t, "basic.wat"), RunConfig{Limits: full})
	if err != nil {
		t.Fatalf("full limits refused: %v", err)
	}
	i.Close()
}

// TestCacheDirRequired: the cache directory is the caller's choice; none
// given (and the cache not disabled) is E-RUN-102, never a guess at $HOME.
func TestCacheDirRequired(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	e, err := NewEngine(Config{})
	if err == nil {
		e.Close()
		t.Fatal("an engine without a cache directory was made")
	}
	if !strings.Contains(err.Error(), "E-RUN-102") {
		t.Fatalf("error %v", err)
	}
	e, err = NewEngine(Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
