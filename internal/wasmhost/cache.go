package wasmhost

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"
)

// The compile cache. wasmtime's deserialize runs native code it does not
// re-validate, so a cache file is trusted only if it carries a valid MAC
// under a per-directory secret key (a 0600 file beside the entries). The MAC
// covers the entry name and the payload and is verified BEFORE the payload
// reaches wasmtime; a file that fails is deleted and rebuilt.
//
// The MAC is GMAC (AES-256-GCM over no plaintext, the payload as additional
// data, under a key derived from the directory key and the entry name) with a random 96-bit nonce per file: it runs at several
// GB/s with AES-NI, where HMAC-SHA-256 took ~13 ms for the ~10 MB compiled
// form of a Go component on this machine.
//
// Entry name: hex(SHA-256(component bytes || wasmtime version || engine
// settings || GOOS/GOARCH)). <name>.cwasm is the serialized component as
// wasmtime wrote it (so wasmtime can map it); <name>.mac is magic (8 bytes)
// || nonce (12) || tag (16).

var cacheMagic = []byte("MURCWM02")

const (
	nonceSize = 12
	tagSize   = 16
)

const keyFile = "cache.key"

func openCache(dir, keyPath string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, err
		}
	}
	kp := keyPath
	if kp == "" {
		kp = filepath.Join(dir, keyFile)
	} else if err := os.MkdirAll(filepath.Dir(kp), 0o700); err != nil {
		return nil, err
	}
	keyDir := filepath.Dir(kp)
	if err := checkPrivate(kp); err != nil {
		return nil, err
	}
	key, err := os.ReadFile(kp)
	if err == nil && len(key) == 32 {
		return key, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// No (or a damaged) key: make one. Entries MACed under an old key simply
	// fail verification and get rebuilt.
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(keyDir, ".key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return nil, err
	}
	// Link rather than rename: if another process made a key first, use theirs.
	if err := os.Link(tmp.Name(), kp); err != nil {
		if k2, err2 := os.ReadFile(kp); err2 == nil && len(k2) == 32 {
			return k2, nil
		}
		if err := os.Rename(tmp.Name(), kp); err != nil {
			return nil, err
		}
	}
	return key, nil
}

// checkPrivate refuses a key file that another user owns or that others
// may read or write: its MAC would prove nothing.
func checkPrivate(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("the cache key %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("the cache key %s is readable or writable by others (mode %o)", path, st.Mode().Perm())
	}
	if uid, ok := fileOwner(st); ok && uid != os.Getuid() {
		return fmt.Errorf("the cache key %s belongs to uid %d, not to this user (%d)", path, uid, os.Getuid())
	}
	return nil
}

func cacheName(wasm []byte) string {
	h := sha256.New()
	h.Write(wasm)
	h.Write([]byte{0})
	h.Write([]byte("wasmtime-" + wasmtimeVersion))
	h.Write([]byte{0})
	h.Write([]byte(engineSettings))
	h.Write([]byte{0})
	h.Write([]byte(runtime.GOOS + "/" + runtime.GOARCH))
	return hex.EncodeToString(h.Sum(nil))
}

func (e *Engine) cacheMAC(nonce []byte, name string, payload []byte) []byte {
	// A per-entry key binds the MAC to the entry name (an entry copied over
	// another's name fails) without copying the payload.
	sub := hmac.New(sha256.New, e.cacheKey)
	sub.Write([]byte(name))
	block, err := aes.NewCipher(sub.Sum(nil))
	if err != nil {
		panic(err) // the key is always 32 bytes
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return g.Seal(nil, nonce, nil, payload)
}

// cacheLoad loads a verified entry, or returns nil. A present but
// unverifiable entry is deleted (and logged), never loaded.
//
// The payload file is opened once, mapped to compute its MAC, and then
// handed to wasmtime through that same descriptor (/proc/self/fd/N), which
// maps it instead of copying it (~6 ms saved per load of a Go component). The
// file verified is the file loaded: entries are only ever replaced by
// rename, so a concurrent writer cannot change it underneath; only someone
// who can already write the user's 0600 files could.
func (e *Engine) cacheLoad(name string) *C.wasmtime_component_t {
	p := filepath.Join(e.cacheDir, name+".cwasm")
	mp := filepath.Join(e.cacheDir, name+".mac")
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	bad := func(why string) *C.wasmtime_component_t {
		e.log.Warn("wasmhost: compiled cache entry rejected; deleting and rebuilding", "path", p, "reason", why)
		os.Remove(p)
		os.Remove(mp)
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || st.Size() > 1<<32 {
		return bad("unreadable or empty")
	}
	mac, err := os.ReadFile(mp)
	m := len(cacheMagic)
	if err != nil || len(mac) != m+nonceSize+tagSize || string(mac[:m]) != string(cacheMagic) {
		return bad("missing or malformed MAC file")
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return bad("cannot map: " + err.Error())
	}
	defer func() {
		if data != nil {
			syscall.Munmap(data)
		}
	}()
	if !hmac.Equal(mac[m+nonceSize:], e.cacheMAC(mac[m:m+nonceSize], name, data)) {
		return bad("MAC mismatch")
	}
	var out *C.wasmtime_component_t
	fdPath := C.CString(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	defer C.free(unsafe.Pointer(fdPath))
	if runtime.GOOS == "linux" {
		if cerr := C.wasmtime_component_deserialize_file(e.e, fdPath, &out); cerr == nil {
			return out
		} else {
			errorText(cerr) // e.g. no /proc: fall back to the verified bytes
		}
	}
	if cerr := C.wasmtime_component_deserialize(e.e, (*C.uint8_t)(unsafe.Pointer(&data[0])), C.size_t(len(data)), &out); cerr != nil {
		return bad("wasmtime refused it: " + firstLine(errorText(cerr)))
	}
	return out
}

func (e *Engine) cacheStore(name string, payload []byte) error {
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	mac := make([]byte, 0, len(cacheMagic)+nonceSize+tagSize)
	mac = append(mac, cacheMagic...)
	mac = append(mac, nonce...)
	mac = append(mac, e.cacheMAC(nonce, name, payload)...)
	if err := e.writeAtomic(name+".cwasm", payload); err != nil {
		return err
	}
	return e.writeAtomic(name+".mac", mac)
}

func (e *Engine) writeAtomic(base string, data []byte) error {
	tmp, err := os.CreateTemp(e.cacheDir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(e.cacheDir, base))
}

// cachePath is the path of wasm's cache entry (whether or not it exists).
func (e *Engine) cachePath(wasm []byte) string {
	if e.cacheDir == "" {
		return ""
	}
	return filepath.Join(e.cacheDir, cacheName(wasm)+".cwasm")
}
