//go:build wasip1

package main

import "github.com/murmur-go/murmur/guest"

// A reactor component never runs main: register the gate from init.
func init() { guest.Gate(check) }

func main() {}
