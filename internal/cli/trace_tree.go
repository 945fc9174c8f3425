package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/trace"
)

// maxTreeDepth bounds how far --tree follows children: mur-roost's depth
// bound is far below it, so only a records tree made by hand reaches it.
const maxTreeDepth = 32

// treeNode is one session of a delegation tree: the root, or a child as its
// parent's trace saw it (the delegation's outcome and duration), with the
// records of its own session when they are found.
type treeNode struct {
	capsule, kind, session string
	outcome, reason        string
	duration               string
	records                string // its trace.jsonl; "" when none was found
	children               []*treeNode
	note                   string
}

// renderTree prints the whole delegation tree under the session whose
// trace is at path: each node's capsule, session, outcome and duration,
// following the children/ each delegation_start names (a child's records
// are $HOME/.murmur/records/<child workdir>/<session>: docs/delegation.md).
func renderTree(w io.Writer, path string) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	sum, res, err := trace.SummarizeFile(path)
	if err != nil {
		return err
	}
	root := &treeNode{capsule: ref(sum.CapsuleName, sum.CapsuleVersion), kind: sum.Kind, session: sum.SessionID,
		outcome: sessionOutcome(sum), duration: fmtDur(sum.Duration), records: path}
	seen := map[string]bool{sum.SessionID: true}
	if err := grow(root, sum, res.Bytes, homeDir, seen, 0); err != nil {
		return err
	}
	printNode(w, root, "", "")
	return nil
}

func ref(name, version string) string {
	if name == "" {
		name = "-"
	}
	if version != "" {
		name += "@" + version
	}
	return name
}

// sessionOutcome is a session's ending as the tree shows its root.
func sessionOutcome(s trace.Summary) string {
	switch {
	case s.Ended:
		return s.ExitStatus
	case s.Events == 0:
		return "no events"
	default:
		return "no session_end"
	}
}

// grow adds n's children from its trace: one per delegation, in the order
// they were made, each followed into its own records.
func grow(n *treeNode, sum trace.Summary, size int64, homeDir string, seen map[string]bool, depth int) error {
	if len(sum.Delegations) == 0 {
		return nil
	}
	workdirs := map[string]string{}
	err := trace.EachLine(n.records, size, func(l trace.Line) {
		if l.EventType == trace.TypeDelegationStart {
			workdirs[l.Str("delegation_id")] = l.Str("child_workdir")
		}
	})
	if err != nil {
		return err
	}
	for _, d := range sum.Delegations {
		c := &treeNode{capsule: ref(d.Capsule, d.Version), session: d.ChildSession, outcome: d.Outcome, reason: d.Reason}
		if d.Outcome != "" {
			c.duration = fmtDur(d.Duration)
		} else {
			c.outcome = "running or unfinished"
		}
		n.children = append(n.children, c)
		wd := workdirs[d.DelegationID]
		if d.ChildSession == "" || wd == "" || !ids.Valid(ids.Session, d.ChildSession) {
			continue
		}
		p := filepath.Join(home.Records(homeDir), filepath.Clean("/"+wd), d.ChildSession, trace.FileName)
		if _, err := os.Lstat(p); err != nil {
			c.note = "no records found"
			continue
		}
		if seen[d.ChildSession] || depth+1 >= maxTreeDepth {
			c.note = "not followed further"
			continue
		}
		seen[d.ChildSession] = true
		csum, cres, err := trace.SummarizeFile(p)
		if err != nil {
			c.note = "its trace cannot be read: " + err.Error()
			continue
		}
		c.records, c.kind = p, csum.Kind
		if err := grow(c, csum, cres.Bytes, homeDir, seen, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// printNode writes one node and its children, drawn with box lines.
func printNode(w io.Writer, n *treeNode, lead, childLead string) {
	what := n.capsule
	if n.kind != "" {
		what += " (" + n.kind + ")"
	}
	line := fmt.Sprintf("%s%s  %s  %s", lead, safe(what), safe(orDash(n.session)), safe(n.outcome))
	if n.duration != "" {
		line += "  " + n.duration
	}
	if n.reason != "" {
		line += "  (" + safe(n.reason) + ")"
	}
	if n.note != "" {
		line += "  [" + safe(n.note) + "]"
	}
	fmt.Fprintln(w, line)
	for i, c := range n.children {
		last := i == len(n.children)-1
		branch, next := "├─ ", "│  "
		if last {
			branch, next = "└─ ", "   "
		}
		printNode(w, c, childLead+branch, childLead+next)
	}
}
