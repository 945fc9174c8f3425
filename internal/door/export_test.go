package door

import "time"

// SetClock replaces the clock of the ended-task bounds.
func SetClock(s *Server, now func() time.Time) {
	s.mu.Lock()
	s.now = now
	s.mu.Unlock()
}

// Kept is how many tasks the door holds and how many of their bytes are of
// ended tasks.
func Kept(s *Server) (tasks, storeTasks int, endedBytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store.mu.RLock()
	defer s.store.mu.RUnlock()
	return len(s.tasks), len(s.store.tasks), s.endBytes
}

// SetConnLimits shortens the connection bounds; call it before Serve.
func SetConnLimits(s *Server, readHeader, read, idle time.Duration, maxConns int) {
	s.limits = limits{readHeader: readHeader, read: read, idle: idle, maxConns: maxConns, refuseLinger: time.Second}
	s.hs = s.newHTTPServer()
}

// UID is the user whose connections s serves.
func UID(s *Server) uint32 { return s.uid }

// OpenConns is how many connections s serves now; MaxOpenConns the most at
// once so far.
func OpenConns(s *Server) int64    { return s.open.Load() }
func MaxOpenConns(s *Server) int64 { return s.maxOpen.Load() }

// ClosedWaiting is how many connections the cap closed for waiting with no
// request; Waiting how many wait so now.
func ClosedWaiting(s *Server) int64 { return s.closedWaiting.Load() }
func Waiting(s *Server) int {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return len(s.waiting)
}
