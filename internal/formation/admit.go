package formation

import (
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

// Admitted is a roster that passed admission: each member bound to the
// sha256 it resolved to, and the formation's edges.
type Admitted struct {
	*Roster
	// Bound is per member, roster order.
	Bound []Bound
	// Callees lists, per member, the indices of the members it may call,
	// in roster order.
	Callees [][]int
	// Warnings are the W-RUN-008 lines, per callee in roster order.
	Warnings []*diag.Diagnostic
}

// Bound is one member's resolved capsule.
type Bound struct {
	SHA256   string
	Manifest *manifest.Manifest
}

// Edges counts the formation's (caller, callee) pairs.
func (a *Admitted) Edges() int {
	n := 0
	for _, c := range a.Callees {
		n += len(c)
	}
	return n
}

// Callers returns the indices of the members that may call member i, in roster order.
func (a *Admitted) Callers(i int) []int {
	var out []int
	for c, cs := range a.Callees {
		for _, x := range cs {
			if x == i {
				out = append(out, c)
			}
		}
	}
	return out
}

// Admit runs admission checks 6–9 on a roster Load returned (checks 1–5
// passed): it reads the project store, the global store under homeDir and
// the project's murmur.lock, and creates nothing. It refuses with one
// diagnostic, at the first failing check.
func Admit(r *Roster, homeDir string) (*Admitted, error) {
	f := r.File
	chain := store.Chain{Project: store.Project(r.Dir), Global: store.Global(homeDir)}
	lock, err := store.ReadLock(r.Dir)
	if err != nil {
		return nil, err
	}
	a := &Admitted{Roster: r, Bound: make([]Bound, len(r.Members)), Callees: make([][]int, len(r.Members))}
	// 6: resolve, then the lock, member by member.
	for i, m := range r.Members {
		ref := m.Full + "@" + m.Version
		res, err := chain.Resolve(m.Full, m.Version, manifest.Options{SkipSecrets: true, LookupEnv: func(string) (string, bool) { return "", false }})
		if err != nil {
			why := "cannot be resolved: " + err.Error()
			switch code := diag.Code(err); {
			case store.IsNotFound(err):
				why = "is not installed in the project or global store"
			case code == "E-REG-002":
				why = "does not match its recorded sha256"
			case strings.HasPrefix(code, "E-MAN-"):
				why = "has a murmur.yaml that cannot be read: " + err.Error()
			}
			return nil, diag.New("E-ROS-007", "%s: member '%s': %s %s", f, m.Name, ref, why).
				WithHint("publish it with 'mur publish <zip>' (global store) or 'mur install' in %s (project store)", r.Dir)
		}
		if kind := res.Manifest.RuntimeKind(); kind != manifest.RuntimeCapsule {
			return nil, diag.New("E-ROS-007", "%s: member '%s': %s is a %s, not a capsule", f, m.Name, ref, kind).
				WithHint("a member runs a capsule (runtime: capsule)")
		}
		if lock != nil {
			if pin, ok := lock.Find(m.Full); ok && (pin.Version != m.Version || pin.SHA256 != res.SHA256) {
				return nil, diag.New("E-REG-005", "%s: member '%s': %s resolves to sha256 %s, but %s pins version %s, sha256 %s",
					f, m.Name, ref, res.SHA256, lock.File, pin.Version, pin.SHA256).
					WithHint("run 'mur install' in %s if the change is intended, or name the pinned version", r.Dir)
			}
		}
		a.Bound[i] = Bound{SHA256: res.SHA256, Manifest: res.Manifest}
	}
	entry := r.Entry()
	// 7: every peer can serve as one.
	for i, m := range r.Members {
		if i == entry {
			continue
		}
		man := a.Bound[i].Manifest
		why := ""
		switch {
		case !man.IsAgent():
			why = "it is a script capsule, which has no door"
		case man.Lifecycle.Acceptance() == "none":
			why = "its lifecycle.task_acceptance is none"
		}
		if why != "" {
			return nil, diag.New("E-ROS-009", "%s: member '%s' (%s@%s) cannot run as a peer: %s", f, m.Name, m.Full, m.Version, why).
				WithHint("a peer is an agent capsule that takes tasks at its door; make it the entry, or run another capsule")
		}
	}
	// The edges: the rules' pairs unioned, or all.
	has := make([][]bool, len(r.Members))
	for i := range has {
		has[i] = make([]bool, len(r.Members))
	}
	if r.All {
		for i := range r.Members {
			for j := range r.Members {
				if i != j && j != entry && a.Bound[j].Manifest.Door.AcceptsPeerTasks() {
					has[i][j] = true
				}
			}
		}
	}
	for _, rule := range r.Rules {
		from := r.Index(rule.From)
		for _, t := range rule.To {
			has[from][r.Index(t)] = true
		}
	}
	for i := range r.Members {
		for j := range r.Members {
			if has[i][j] {
				a.Callees[i] = append(a.Callees[i], j)
			}
		}
	}
	// 8: every callee accepts peer tasks (rules in order; all never raises it).
	for _, rule := range r.Rules {
		for _, t := range rule.To {
			j := r.Index(t)
			if !a.Bound[j].Manifest.Door.AcceptsPeerTasks() {
				m := r.Members[j]
				return nil, diag.New("E-ROS-005", "%s: member '%s' is called by '%s', but %s@%s does not declare exports.peer_tasks.accept: true", f, m.Name, rule.From, m.Full, m.Version).
					WithHint("declare exports.peer_tasks.accept: true in its murmur.yaml, or drop the rule")
			}
		}
	}
	// 9: with any edge, every agent member's door requires a token.
	if a.Edges() > 0 {
		for i, m := range r.Members {
			man := a.Bound[i].Manifest
			if man.IsAgent() && !man.Door.Authenticated() {
				return nil, diag.New("E-ROS-006", "%s: members of this roster call each other, so every member's door must require a token, and member '%s' (%s@%s) declares no network.authentication", f, m.Name, m.Full, m.Version).
					WithHint("declare network.authentication: {scheme: bearer} in its murmur.yaml")
			}
		}
	}
	// W-RUN-008, per callee in roster order.
	for j, m := range r.Members {
		callers := a.Callers(j)
		if len(callers) == 0 {
			continue
		}
		lc := a.Bound[j].Manifest.Lifecycle
		who := fmt.Sprintf("member '%s' (%s@%s)", m.Name, m.Full, m.Version)
		if lc.AfterTaskMode() == "exit" {
			a.Warnings = append(a.Warnings, diag.New("W-RUN-008", "%s ends its session after its first task (lifecycle.after_task: exit), so later calls to it fail", who))
			continue
		}
		capacity := 1
		if lc.Acceptance() == "queue" {
			capacity = lc.QueueDepth.Or(manifest.DefaultQueueDepth) + 1
		}
		if len(callers) > capacity {
			a.Warnings = append(a.Warnings, diag.New("W-RUN-008", "%s holds %d task(s) at a time and %d members may call it, so callers will be told it is busy", who, capacity, len(callers)))
		}
	}
	return a, nil
}
