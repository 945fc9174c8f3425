package wasmhost

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"unsafe"

	"github.com/murmur-go/murmur/internal/atomicfile"
)

// The compile cache. wasmtime's deserialize runs native code it does not
// re-validate, so an entry is trusted only if it carries a valid MAC under a
// secret key (Config.KeyFile, kept apart from the entries), verified BEFORE
// the file reaches wasmtime; an entry that fails is deleted and rebuilt.
//
// The MAC covers the entry name and the identity of the entry's file as the
// kernel reports it (device, inode, size, mtime and ctime in nanoseconds,
// owner), not its 9 MB of bytes: any write to the file, any replacement of
// it and any chmod changes that identity, so a file whose identity still verifies is the
// file this engine wrote and compared byte for byte with what wasmtime
// serialized. RATIONALE.md ("Compile cache") gives the argument in full.
//
// The MAC is GMAC (AES-256-GCM over no plaintext, the identity as additional
// data, under a key derived from the cache key and the entry name) with a
// random 96-bit nonce per entry.
//
// Entry name: hex(SHA-256(source identity || wasmtime version || engine
// settings || GOOS/GOARCH || the rewrites applied before compiling)), where
// the source identity is the caller's digest of the component's bytes (CompileOptions.Digest: the hash its
// resolve already computed) or, without one, the SHA-256 of the bytes.
// <name>.cwasm is the serialized component as wasmtime wrote it (so wasmtime
// can map it); <name>.img the bytes of its memory images (image.go), each
// from a multiple of 64 KiB so runs can map them from the file, when it has
// any; <name>.mac is magic (8 bytes) || nonce (12)
// || tag (16) || plan (encodePlan). The MAC covers the .cwasm's identity,
// the plan and the .img's identity together: code compiled without its data
// segments never loads without the images it was compiled with.

var cacheMagic = []byte("MURCWM04")

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

// cacheName names the entry of a component whose bytes are identified by
// source (see sourceID).
func cacheName(source string) string {
	h := sha256.New()
	h.Write([]byte(source))
	h.Write([]byte{0})
	h.Write([]byte("wasmtime-" + wasmtimeVersion))
	h.Write([]byte{0})
	h.Write([]byte(engineSettings))
	h.Write([]byte{0})
	h.Write([]byte(runtime.GOOS + "/" + runtime.GOARCH))
	h.Write([]byte{0})
	h.Write([]byte(rewrites()))
	return hex.EncodeToString(h.Sum(nil))
}

// sourceID is what identifies a component's bytes in its cache name: the
// caller's digest when it gives one (kept apart from plain hashes by its
// prefix), otherwise the SHA-256 of the bytes.
func sourceID(wasm []byte, digest string) string {
	if digest != "" {
		return "digest:" + digest
	}
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// entryAD is what an entry's MAC authenticates: the .cwasm's identity, the
// plan of its images and the .img's identity ("" without images).
func entryAD(cwasmID, plan, imgID []byte) []byte {
	ad := append([]byte("cwasm:"), cwasmID...)
	ad = append(append(ad, "\x00plan:"...), plan...)
	return append(append(ad, "\x00img:"...), imgID...)
}

func (e *Engine) cacheMAC(nonce []byte, name string, identity []byte) []byte {
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
	return g.Seal(nil, nonce, nil, identity)
}

// cacheLoad loads a verified entry with its memory images, or returns nil.
// A present but unverifiable entry is deleted (and logged), never loaded.
//
// The payload file is opened once, its identity (fstat) checked against the
// MAC, and then handed to wasmtime through that same descriptor
// (/proc/self/fd/N), which maps it instead of copying it. The file verified
// is the file loaded: the descriptor cannot be re-pointed, and a write to
// the file after the check would have to race this very load. The .img file
// is returned open (its verified descriptor) with its identity: runs map the
// images from it, checking that identity each time (bindImages).
func (e *Engine) cacheLoad(name string) (*C.wasmtime_component_t, *cachedImages) {
	p := filepath.Join(e.cacheDir, name+".cwasm")
	mp := filepath.Join(e.cacheDir, name+".mac")
	ip := filepath.Join(e.cacheDir, name+".img")
	f, err := os.Open(p)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	bad := func(why string) (*C.wasmtime_component_t, *cachedImages) {
		e.log.Warn("wasmhost: compiled cache entry rejected; deleting and rebuilding", "path", p, "reason", why)
		os.Remove(p)
		os.Remove(mp)
		os.Remove(ip)
		return nil, nil
	}
	id, size, err := fileIdentity(f)
	if err != nil || size == 0 || size > 1<<32 {
		return bad("unreadable or empty")
	}
	mac, err := os.ReadFile(mp)
	m := len(cacheMagic)
	if err != nil || len(mac) < m+nonceSize+tagSize || string(mac[:m]) != string(cacheMagic) {
		return bad("missing or malformed MAC file")
	}
	plan := mac[m+nonceSize+tagSize:]
	imgs, total, ok := decodePlan(plan)
	if !ok {
		return bad("malformed MAC file")
	}
	var ci *cachedImages
	if len(imgs) > 0 {
		fi, err := os.Open(ip)
		if err != nil {
			return bad("its memory images are missing")
		}
		imgID, isize, err := fileIdentity(fi)
		if err != nil || uint64(isize) != total {
			fi.Close()
			return bad("its memory images are unreadable or of the wrong size")
		}
		if !hmac.Equal(mac[m+nonceSize:m+nonceSize+tagSize], e.cacheMAC(mac[m:m+nonceSize], name, entryAD(id, plan, imgID))) {
			fi.Close()
			return bad("MAC mismatch (the files changed since they were written, or another key wrote them)")
		}
		ci = &cachedImages{imgs: imgs, file: fi, id: imgID}
	} else if !hmac.Equal(mac[m+nonceSize:m+nonceSize+tagSize], e.cacheMAC(mac[m:m+nonceSize], name, entryAD(id, plan, nil))) {
		return bad("MAC mismatch (the file changed since it was written, or another key wrote it)")
	}
	var out *C.wasmtime_component_t
	if runtime.GOOS == "linux" {
		fdPath := C.CString(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
		defer C.free(unsafe.Pointer(fdPath))
		if cerr := C.wasmtime_component_deserialize_file(e.e, fdPath, &out); cerr == nil {
			return out, ci
		} else {
			errorText(cerr) // e.g. no /proc: fall back to reading the descriptor
		}
	}
	data, err := io.ReadAll(f)
	if err != nil || int64(len(data)) != size {
		ci.close()
		return bad("cannot read it")
	}
	if cerr := C.wasmtime_component_deserialize(e.e, (*C.uint8_t)(unsafe.Pointer(&data[0])), C.size_t(len(data)), &out); cerr != nil {
		ci.close()
		return bad("wasmtime refused it: " + firstLine(errorText(cerr)))
	}
	return out, ci
}

// cachedImages are a cache entry's verified images: their plan, the open
// .img file and the identity its MAC covered.
type cachedImages struct {
	imgs []memImage
	file *os.File
	id   []byte
}

func (c *cachedImages) close() {
	if c != nil {
		c.file.Close()
	}
}

// cacheStore writes an entry: the payload (and the images' bytes) to
// temporary files renamed into place, then — once each file's identity is
// taken (after the timestamp clock has passed its ctime: settledIdentity)
// and its bytes read back and found equal to what was written — the MAC of
// those identities and the plan. A change racing the store is either seen
// by the comparison (before the identity was taken, its bytes differ) or
// changes the identity (after it), so the entry fails.
func (e *Engine) cacheStore(name string, payload []byte, imgs []memImage) error {
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	os.Remove(filepath.Join(e.cacheDir, name+".mac"))
	written := func(base string, data []byte) ([]byte, error) {
		if err := e.writeAtomic(base, data); err != nil {
			return nil, err
		}
		f, err := os.Open(filepath.Join(e.cacheDir, base))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		id, err := settledIdentity(f)
		if err != nil {
			return nil, err
		}
		back, err := io.ReadAll(f)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(back, data) {
			return nil, errors.New("the entry changed while it was written")
		}
		return id, nil
	}
	id, err := written(name+".cwasm", payload)
	if err != nil {
		return err
	}
	var imgID []byte
	if len(imgs) > 0 {
		all := make([]byte, imageFileLayout(imgs))
		for _, im := range imgs {
			copy(all[im.fileOff:], im.data)
		}
		if imgID, err = written(name+".img", all); err != nil {
			return err
		}
	} else {
		os.Remove(filepath.Join(e.cacheDir, name+".img"))
	}
	plan := encodePlan(imgs)
	mac := make([]byte, 0, len(cacheMagic)+nonceSize+tagSize+len(plan))
	mac = append(mac, cacheMagic...)
	mac = append(mac, nonce...)
	mac = append(mac, e.cacheMAC(nonce, name, entryAD(id, plan, imgID))...)
	mac = append(mac, plan...)
	return e.writeAtomic(name+".mac", mac)
}

// cachePath is the path of the cache entry of wasm compiled without a
// digest (whether or not it exists).
func (e *Engine) cachePath(wasm []byte) string {
	if e.cacheDir == "" {
		return ""
	}
	return filepath.Join(e.cacheDir, cacheName(sourceID(wasm, ""))+".cwasm")
}

func (e *Engine) writeAtomic(base string, data []byte) error {
	return atomicfile.Write(filepath.Join(e.cacheDir, base), data, 0o600)
}
