//go:build !linux

package contain_test

const attackArg = "__contain-attack"

func attackMain([]string) int { return 2 }
