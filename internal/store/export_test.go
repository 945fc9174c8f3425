package store

// IsLazy reports whether a was opened over a remembered digest.
func IsLazy(a *Archive) bool { return a.src != nil }

// RememberedFile is where s remembers the digest of the file at path.
func RememberedFile(s *Store, path string) string { return s.remember.file(path) }

// IdentityOf is a file's identity as entries name it.
var IdentityOf = identity
