package snapshot

// SetAfterLstat sets the hook called between an entry's lstat and its open.
func SetAfterLstat(f func(rel string)) { afterLstat = f }
