package wasmhost

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
// settings || GOOS/GOARCH)) + ".cwasm". File layout: magic (8 bytes) ||
// nonce (12) || tag (16) || serialized component.

var cacheMagic = []byte("MURCWM02")

const (
	nonceSize = 12
	tagSize   = 16
)

const keyFile = "cache.key"

func openCache(dir string) ([]byte, error) {
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
	kp := filepath.Join(dir, keyFile)
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
	tmp, err := os.CreateTemp(dir, ".key-*")
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

func cacheName(wasm []byte) string {
	h := sha256.New()
	h.Write(wasm)
	h.Write([]byte{0})
	h.Write([]byte("wasmtime-" + WasmtimeVersion))
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

// cacheLoad returns the verified payload of an entry, or nil. A present but
// unverifiable entry is deleted (and logged), never returned.
func (e *Engine) cacheLoad(name string) []byte {
	p := filepath.Join(e.cacheDir, name+".cwasm")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	m := len(cacheMagic)
	hdr := m + nonceSize + tagSize
	if len(data) <= hdr || string(data[:m]) != string(cacheMagic) ||
		!hmac.Equal(data[m+nonceSize:hdr], e.cacheMAC(data[m:m+nonceSize], name, data[hdr:])) {
		e.log.Warn("wasmhost: compiled cache entry failed verification; deleting and rebuilding", "path", p)
		os.Remove(p)
		return nil
	}
	return data[hdr:]
}

func (e *Engine) cacheStore(name string, payload []byte) error {
	p := filepath.Join(e.cacheDir, name+".cwasm")
	tmp, err := os.CreateTemp(e.cacheDir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	buf := make([]byte, 0, len(cacheMagic)+nonceSize+tagSize+len(payload))
	buf = append(buf, cacheMagic...)
	buf = append(buf, nonce...)
	buf = append(buf, e.cacheMAC(nonce, name, payload)...)
	buf = append(buf, payload...)
	if _, err := tmp.Write(buf); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// CachePath is the path of wasm's cache entry (whether or not it exists).
func (e *Engine) CachePath(wasm []byte) string {
	if e.cacheDir == "" {
		return ""
	}
	return filepath.Join(e.cacheDir, cacheName(wasm)+".cwasm")
}
