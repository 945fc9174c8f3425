package ids

import (
	"testing"
	"time"
)

func TestNewShapeAndOrder(t *testing.T) {
	for _, p := range []string{Session, Delegation, Formation, Event} {
		a := New(p)
		if !Valid(p, a) {
			t.Fatalf("New(%q) = %q is not valid", p, a)
		}
		if len(a) != len(p)+32 {
			t.Fatalf("len(%q) = %d", a, len(a))
		}
	}
	prev := New(Session)
	time.Sleep(2 * time.Millisecond)
	next := New(Session)
	if !(prev < next) {
		t.Fatalf("ids do not sort by time: %s !< %s", prev, next)
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"ses_0190a1b2c3d47e5f8a9b0c1d2e3f4a5b", true},
		{"ses_0190A1B2C3D47E5F8A9B0C1D2E3F4A5B", false},
		{"ses_0190a1b2c3d47e5f8a9b0c1d2e3f4a5", false},
		{"dlg_0190a1b2c3d47e5f8a9b0c1d2e3f4a5b", false},
		{"ses_0190a1b2c3d47e5f8a9b0c1d2e3f4a5g", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := Valid(Session, tc.s); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestTimeRoundTrip(t *testing.T) {
	now := time.Now()
	got, ok := Time(Session, New(Session))
	if !ok || got.Sub(now).Abs() > time.Second {
		t.Fatalf("Time of a fresh id = %v, %v; want about %v", got, ok, now)
	}
	past := now.Add(-72 * time.Hour).Truncate(time.Millisecond)
	id := AtTime(Session, past)
	if !Valid(Session, id) {
		t.Fatalf("AtTime gave invalid %q", id)
	}
	if got, ok := Time(Session, id); !ok || !got.Equal(past) {
		t.Fatalf("Time(AtTime(%v)) = %v, %v", past, got, ok)
	}
	if _, ok := Time(Session, "ses_00000000000000000000000000000000"); ok {
		t.Fatal("a non-v7 id has no time")
	}
}
