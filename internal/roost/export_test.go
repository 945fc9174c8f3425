package roost

import (
	"errors"
	"strings"
)

// cached reports whether the registry holds an answer for key (name@version).
func (r *storeRegistry) cached(key string) bool {
	name, version, _ := strings.Cut(key, "@")
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.entries[coords{name, version}]
	return ok
}

func asErr(err error, target any) bool { return errors.As(err, target) }

// parseFlatBody is parseFlatFields over a map of fields, as the tests name them.
func parseFlatBody(body []byte, fields map[string]*string) bool {
	var fs []bodyField
	for k, dst := range fields {
		fs = append(fs, bodyField{k, dst})
	}
	return parseFlatFields(body, fs)
}
