package launch

import (
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
)

// A script capsule's part in delegation (docs/delegation.md):
// as a parent it has no door, so its runtime opens a completion listener
// of its own; as a child its task came on standard input and its answer is
// its work folder's out/result.txt.

// scriptRuntime makes a script parent's delegate-task runtime; nil when
// spawn.allow is empty or the session is not registered.
func (w *spawnWiring) scriptRuntime(p *Plan, sess *session.Session, rec *trace.Recorder, opts Options) (*delegate.Runtime, error) {
	if len(w.spawnAllow) == 0 || !w.registered {
		return nil, nil
	}
	bin := p.murBinary()
	g := p.Grants.Capsule
	rt, err := delegate.NewScript(delegate.Config{RoostURL: w.roostURL, Credential: w.cred,
		SessionID: sess.ID, Name: sess.Name, Version: sess.Version, RecordsDir: sess.RecordsDir, RuntimeDir: sess.RuntimeDir,
		SpawnAllow: g.SpawnAllow, WorkdirSnapshot: g.WorkdirSnapshot, EnvAllow: g.EnvAllow,
		Lookup: p.lookup, MurBinary: bin, Deadline: delegate.Deadline(p.Manifest, p.lookup),
		Snapshot: p.workdirSnapshot(sess), ChildEnvAllow: p.childEnvAllow, Tier: p.Containment.Achieved, FormationID: w.formationID, Recorder: rec, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	w.rt = rt
	return rt, nil
}

// scriptTask is a delegated script child's task: the one its parent wrote
// on standard input, which goes into its task.md.
func (w *spawnWiring) scriptTask() (string, bool) {
	if w.launched == nil {
		return "", false
	}
	return w.launched.Task, true
}

// endScript ends what a script parent's run leaves running (the task ended
// first: ending is its session_end exit_status) and deregisters.
func (w *spawnWiring) endScript(ending string) {
	w.windingDown.Store(true)
	if w.rt != nil {
		w.rt.EndScript(ending)
	}
	w.close(ending)
}
