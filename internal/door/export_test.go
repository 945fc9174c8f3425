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
