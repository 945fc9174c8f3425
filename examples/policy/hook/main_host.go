//go:build !wasip1

package main

// On the host the package builds only so that go test can check its rules
// (policy_test.go); the component is the wasip1 build (main.go).
func main() {}
