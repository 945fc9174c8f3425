package roost

import "errors"

// cached reports whether the registry holds an answer for key (name@version).
func (r *storeRegistry) cached(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.entries[key]
	return ok
}

func asErr(err error, target any) bool { return errors.As(err, target) }
