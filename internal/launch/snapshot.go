package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/snapshot"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
)

// workdirSnapshot is the parent's side of the workdir snapshot
// (docs/delegation.md): it copies the session's work
// folder into a child's directory, under the ceiling the child's own
// manifest declares (capabilities.resources.workdir_max_bytes, 10 GiB when
// it declares none). The child's manifest is read where the child will
// read it: the global store, as `mur run --capsule` resolves it. A copy
// that fails removes the child's directory.
//
// The copies of one session together write at most SnapshotBudgetFactor
// times the session's own workdir_max_bytes of file data (holes and hard
// links cost nothing): every copy stays in the records dir until the
// records go, so without a bound a session could fill the disk one
// delegation at a time.
func (p *Plan) workdirSnapshot(sess *session.Session) func(ctx context.Context, full, version, childDir string) (*trace.Snapshot, error) {
	budget := snapshot.NewBudget(SnapshotBudgetFactor * p.Manifest.Capabilities.EffLimits().WorkdirMaxBytes)
	return func(ctx context.Context, full, version, childDir string) (*trace.Snapshot, error) {
		max, err := p.childWorkdirMax(full, version)
		if err != nil {
			snapshot.Remove(childDir)
			return nil, err
		}
		sum, err := snapshot.Copy(ctx, sess.Workdir, childDir, snapshot.Options{MaxBytes: max,
			RuntimeOwned: []string{sess.RuntimeDir, sess.RecordsDir}, Budget: budget})
		if err != nil {
			snapshot.Remove(childDir)
			var spent *snapshot.BudgetSpent
			if errors.As(err, &spent) {
				return nil, fmt.Errorf("%w: %d times this capsule's capabilities.resources.workdir_max_bytes; the copies stay until the session's records are removed (mur trace rm)", err, SnapshotBudgetFactor)
			}
			return nil, err
		}
		return sum, nil
	}
}

// SnapshotBudgetFactor times a session's own
// capabilities.resources.workdir_max_bytes is the file data its workdir
// snapshots may write in all (40 GiB under the 10 GiB default).
const SnapshotBudgetFactor = 4

func (p *Plan) childWorkdirMax(full, version string) (int64, error) {
	m, err := p.childManifest(full, version, "capabilities.resources.workdir_max_bytes")
	if err != nil {
		return 0, err
	}
	return m.Capabilities.Resources.WorkdirMaxBytes.Or(manifest.DefaultWorkdirMaxBytes), nil
}

// childEnvAllow is a child's capabilities.env.allow, read where the child
// will read it: the parent hands on only names both lists hold
// (docs/delegation.md).
func (p *Plan) childEnvAllow(full, version string) ([]string, error) {
	m, err := p.childManifest(full, version, "capabilities.env.allow")
	if err != nil {
		return nil, err
	}
	return m.Capabilities.Env.Allow, nil
}

// childManifest resolves a child's manifest from the global store, as
// `mur run --capsule` does; key says what it is read for.
func (p *Plan) childManifest(full, version, key string) (*manifest.Manifest, error) {
	chain, err := store.ChainFor("", p.Home)
	if err != nil {
		return nil, err
	}
	r, err := chain.Resolve(full, version, manifest.Options{SkipSecrets: true})
	if err != nil {
		return nil, fmt.Errorf("the child's manifest cannot be read for its %s: %w", key, err)
	}
	return r.Manifest, nil
}

// Restriction is parent_workdir.restriction for a child applying the tier
// achieved (docs/delegation.md): absent when the
// parent's folder is not in its composed root (sealed), enforced when
// Landlock refuses it (scoped), advisory when nothing in the kernel does.
func Restriction(achieved string) string {
	switch achieved {
	case contain.Sealed:
		return "absent"
	case contain.Scoped:
		return "enforced"
	}
	return "advisory"
}

// withParentWorkdir is a child's effective_grants with parent_workdir: the
// snapshot its parent made, plus the restriction its own tier gives.
func withParentWorkdir(grants json.RawMessage, snap *trace.Snapshot, achieved string) json.RawMessage {
	if snap == nil {
		return grants
	}
	pw := *snap
	pw.Restriction = Restriction(achieved)
	if pw.Skipped == nil {
		pw.Skipped = []trace.SnapshotSkip{}
	}
	b, err := json.Marshal(pw)
	if err != nil {
		return grants
	}
	// Appended, so the grants keep their order (the same bytes as a
	// session without a snapshot, plus one key).
	g := bytes.TrimSpace(grants)
	if len(g) < 2 || g[0] != '{' || g[len(g)-1] != '}' {
		return json.RawMessage(`{"parent_workdir":` + string(b) + `}`)
	}
	out := append([]byte{}, g[:len(g)-1]...)
	if len(bytes.TrimSpace(g[1:len(g)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"parent_workdir":`...)
	out = append(out, b...)
	return append(out, '}')
}
