//go:build !linux

package grant

import (
	"context"
	"time"
)

// treeWatch is inotify's on Linux; elsewhere there is none and
// WatchWorkdir polls.
type treeWatch struct{}

func newTreeWatch(context.Context) *treeWatch  { return nil }
func (t *treeWatch) ok() bool                  { return false }
func (t *treeWatch) add(int)                   {}
func (t *treeWatch) wait(d time.Duration) bool { return true }
func (t *treeWatch) close()                    {}
