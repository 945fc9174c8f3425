package main

import (
	"testing"

	"github.com/murmur-go/murmur/guest"
)

func TestCheck(t *testing.T) {
	bash := "/usr/bin/bash"
	tests := []struct {
		name string
		r    guest.CallRequest
		deny string // a part of the reason; "" allows
	}{
		{"a command in the work folder", guest.CallRequest{ToolName: "bash", Kind: guest.CallShell, Binary: &bash,
			Argv: []string{bash, "-c", "ls -l notes && cat notes/a.txt"}}, ""},
		{"an absolute path", guest.CallRequest{ToolName: "bash", Kind: guest.CallShell, Binary: &bash,
			Argv: []string{bash, "-c", "cat /etc/passwd"}}, "/etc/passwd"},
		{"climbing out", guest.CallRequest{ToolName: "bash", Kind: guest.CallShell, Binary: &bash,
			Argv: []string{bash, "-c", "rm -rf ../other"}}, "../other"},
		{"a quoted home path", guest.CallRequest{ToolName: "bash", Kind: guest.CallShell, Binary: &bash,
			Argv: []string{bash, "-c", `cp x "~/.ssh/id"`}}, "~/.ssh/id"},
		{"a split command's word", guest.CallRequest{ToolName: "git", Kind: guest.CallShell,
			Argv: []string{"/usr/bin/git", "-C", "/srv/repo", "log"}}, "/srv/repo"},
		{"a plain delegation", guest.CallRequest{ToolName: "delegate-task", Kind: guest.CallRuntime,
			Input: `{"capsule":"worker","version":"1.0.0","task":"summarise notes.md"}`}, ""},
		{"a delegation with a key", guest.CallRequest{ToolName: "delegate-task", Kind: guest.CallRuntime,
			Input: `{"capsule":"worker","version":"1.0.0","task":"use sk-abcdefghijklmnopqrstu to call it"}`}, "secret-looking"},
		{"a WASM tool", guest.CallRequest{ToolName: "echo", Kind: guest.CallWASM, Input: `{"message":"/etc/passwd"}`}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := check(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			denied, why := d.Denied()
			if denied != (tc.deny != "") || tc.deny != "" && !contains(why, tc.deny) {
				t.Errorf("denied %v (%q), want a denial naming %q", denied, why, tc.deny)
			}
		})
	}
	if _, err := check(guest.CallRequest{ToolName: "delegate-task", Kind: guest.CallRuntime, Input: "not json"}); err == nil {
		t.Error("unreadable input: no error")
	}
}

func contains(s, part string) bool {
	for i := 0; i+len(part) <= len(s); i++ {
		if s[i:i+len(part)] == part {
			return true
		}
	}
	return false
}
