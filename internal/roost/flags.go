package roost

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Config is the daemon's command line, parsed.
type Config struct {
	Port          int
	RegistryPath  string // "" = $HOME/.murmur/artifacts, resolved at start-up
	SpawnAllow    []string
	MaxDepth      int
	MaxConcurrent int
	// MaxLiveCapsules is -1 until derived from the host's cores.
	MaxLiveCapsules int
	Version         bool
	// Help is --help or -h: print Usage and exit 0, binding no port.
	Help bool
}

// Usage is what --help prints: the flag table. Every other argument is
// still refused; --help and -h are the only short-cut a person tries first.
const Usage = `usage: mur-roost [flags]

The spawn referee daemon: it listens on 127.0.0.1 and decides which capsule
may register and which child a session may spawn.

flags (each value flag takes --flag VALUE or --flag=VALUE):
  --port N                 port to bind on 127.0.0.1 (default 7700; 0 picks a free one)
  --registry-path DIR      the artifact store capsules are resolved from
                           (default $HOME/.murmur/artifacts)
  --spawn-allow NAME       a full name <scope>/<name> that may register with no
                           approval; repeat the flag per name (default: none)
  --max-depth N            levels of delegation below a top-level capsule (default 3)
  --max-concurrent N       children one session may hold live at once (default 4)
  --max-live-capsules N    capsules live on this host at once (default: the CPUs
                           times 8, clamped to 16..256)
  --version                print the daemon's version and exit
  -h, --help               print this and exit

Numbers are whole numbers; none means unlimited, and 0 refuses every delegation.
Any other argument is refused with 'unknown argument: ...' (exit status 2).
`


// usageError is a command line the daemon refuses (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// ParseArgs reads the command line by hand, because the specification fixes
// its exact semantics: `--flag VALUE` and `--flag=VALUE` for every value flag,
// whole numbers only, `--spawn-allow` once per name, and any other argument
// refused with `unknown argument: <flag>` (so `--max-total` is refused too).
// A flag given twice keeps its last value; --spawn-allow accumulates.
func ParseArgs(args []string) (Config, error) {
	c := Config{Port: 7700, MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: -1}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, val, hasVal := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "--") {
			name, hasVal = arg, false
		}
		switch name {
		case "--version":
			if hasVal {
				return c, &usageError{lineUnknownArgument(arg)}
			}
			c.Version = true
			continue
		case "--help", "-h":
			if hasVal {
				return c, &usageError{lineUnknownArgument(arg)}
			}
			c.Help = true
			continue
		case "--port", "--registry-path", "--spawn-allow", "--max-depth", "--max-concurrent", "--max-live-capsules":
		default:
			return c, &usageError{lineUnknownArgument(name)}
		}
		if !hasVal {
			if i+1 >= len(args) {
				return c, &usageError{fmt.Sprintf("mur-roost: %s needs a value", name)}
			}
			i++
			val = args[i]
		}
		switch name {
		case "--registry-path":
			if val == "" {
				return c, &usageError{"mur-roost: --registry-path needs a value"}
			}
			c.RegistryPath = val
		case "--spawn-allow":
			c.SpawnAllow = append(c.SpawnAllow, val)
		case "--port":
			n, err := wholeNumber(name, val)
			if err != nil {
				return c, err
			}
			if n > 65535 {
				return c, &usageError{fmt.Sprintf("mur-roost: --port takes a port number from 0 to 65535, not '%s'", val)}
			}
			c.Port = n
		default:
			n, err := wholeNumber(name, val)
			if err != nil {
				return c, err
			}
			switch name {
			case "--max-depth":
				c.MaxDepth = n
			case "--max-concurrent":
				c.MaxConcurrent = n
			case "--max-live-capsules":
				c.MaxLiveCapsules = n
			}
		}
	}
	return c, nil
}

// wholeNumber accepts decimal digits only: no sign, no unit, nothing meaning
// "unlimited".
func wholeNumber(flag, s string) (int, error) {
	bad := &usageError{fmt.Sprintf("mur-roost: %s takes a whole number, not '%s'", flag, s)}
	if s == "" {
		return 0, bad
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, bad
		}
	}
	// A large figure is still a whole number (it is not "unlimited": it is
	// that many); only one this machine cannot hold is refused, by name.
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, &usageError{fmt.Sprintf("mur-roost: %s takes a whole number no larger than %d, not '%s'", flag, math.MaxInt, s)}
	}
	return n, nil
}

// DefaultMaxLive is the derived machine ceiling: the CPUs in this process's
// affinity mask times 8, clamped to [16, 256].
func DefaultMaxLive() int {
	return clampCeiling(affinityCPUs() * 8)
}

func clampCeiling(n int) int {
	if n < 16 {
		return 16
	}
	if n > 256 {
		return 256
	}
	return n
}

func affinityCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 1
	}
	if n := set.Count(); n > 0 {
		return n
	}
	return 1
}
