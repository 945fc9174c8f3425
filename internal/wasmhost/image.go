package wasmhost

/*
#include <stdlib.h>
#include <unistd.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// Memory images: our own copy-on-write initialisation of linear memory.
//
// wasmtime's copy-on-write images (memory_init_cow) abort with a host memory
// creator, and the creator is what keeps resource_limit observable; so a
// Go-kit call used to zero its fresh memory and copy ~1.35 MB of data
// segments into it on every instantiation. Instead, at compile time, a core
// module whose memory is provably initialised by its data segments alone has
// them replaced by an image: the bytes its memory holds after those segments
// ran, built once here. The module is compiled without its data section, and
// the memory creator (shim.c) maps the image MAP_PRIVATE over the start of
// every new memory of that module, so pages fault in copy-on-write from one
// shared copy (a sealed memfd, or the verified cache file) instead of being
// zeroed and copied.
//
// A module gets an image only when the result is byte for byte what
// wasmtime would have produced:
//   - it defines exactly one memory (32-bit, unshared, 64 KiB pages), and
//     imports none: a defined memory starts zeroed and nothing but its own
//     data segments writes it before its start function runs;
//   - every data segment is active, for memory 0, at an i32.const offset,
//     and there is no data count section (code naming segments by index in
//     memory.init or data.drop would find them gone);
//   - every segment ends within the memory's minimum size: instantiation
//     could not have failed on one, and the image fits the memory;
//   - the data is not sparse (see maxImageBytes and imageModule): the image
//     holds every gap as zeros;
//   - no other core module of the component defines a memory of the same
//     type: the creator knows a memory only by its type, so that type must
//     name this module's memory alone (the same module instantiated twice
//     gets the same image twice, which is right).
// Segments are applied in order, so a later one overrides an earlier one as
// at instantiation. Everything else is left to coalesceModule.

// imageMinBytes is the least data a module must carry to get an image:
// below it copying is cheaper than mapping (a WAT guest's few bytes).
var imageMinBytes = 64 << 10

// maxImageBytes bounds one image.
const maxImageBytes = 256 << 20

// noMaxPages is a memory type without a maximum.
const noMaxPages = ^uint64(0)

// memType is a defined memory's type as the memory creator sees it.
type memType struct {
	minPages, maxPages uint64
}

// memImage is one module's initial memory: size bytes from byte off of it,
// held in data (just compiled) or at fileOff in a cache entry's .img file.
type memImage struct {
	memType
	off, size uint64
	data      []byte
	fileOff   uint64
}

// prepareData returns the component to compile: the modules that qualify
// with their data sections removed, their images in images (in the order
// the modules appear), and every other module's data coalesced. wasm itself
// is returned when nothing changed or it cannot be parsed.
func prepareData(wasm []byte) ([]byte, []memImage) {
	if len(wasm) < 8 || !bytes.HasPrefix(wasm, []byte("\x00asm")) || bytes.Equal(wasm[4:8], coreHeader[4:8]) {
		return wasm, nil
	}
	counts := map[memType]int{}
	if !countMemories(wasm, counts) {
		counts = nil // a memory we cannot read: no images at all
	}
	var imgs []memImage
	out, changed, err := rewriteComponent(wasm, counts, &imgs)
	if err != nil || !changed {
		return wasm, nil
	}
	return out, imgs
}

// countMemories counts, per type, the core modules of a component (nested
// ones included) that define a memory of that type. False when some module
// or memory cannot be read.
func countMemories(b []byte, counts map[memType]int) bool {
	secs, err := readSections(b)
	if err != nil {
		return false
	}
	for _, s := range secs {
		switch s.id {
		case 1:
			ms, err := readSections(s.body)
			if err != nil || !bytes.HasPrefix(s.body, coreHeader) {
				return false
			}
			seen := map[memType]bool{}
			for _, m := range ms {
				if m.id != secMemory {
					continue
				}
				types, ok := readMemories(m.body)
				if !ok {
					return false
				}
				for _, t := range types {
					if !seen[t] {
						seen[t] = true
						counts[t]++
					}
				}
			}
		case 4:
			if !countMemories(s.body, counts) {
				return false
			}
		}
	}
	return true
}

// readMemories parses a memory section whose memories are all plain
// (32-bit, unshared, default page size); false otherwise.
func readMemories(b []byte) ([]memType, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, false
	}
	i := w
	var out []memType
	for range n {
		if i >= len(b) || b[i] > 1 {
			return nil, false
		}
		hasMax := b[i] == 1
		i++
		min, w := binary.Uvarint(b[i:])
		if w <= 0 || min > 65536 {
			return nil, false
		}
		i += w
		t := memType{min, noMaxPages}
		if hasMax {
			max, w := binary.Uvarint(b[i:])
			if w <= 0 || max > 65536 {
				return nil, false
			}
			i += w
			t.maxPages = max
		}
		out = append(out, t)
	}
	return out, i == len(b)
}

// rewriteComponent is coalesceComponent with images where they qualify
// (counts nil: none).
func rewriteComponent(b []byte, counts map[memType]int, imgs *[]memImage) ([]byte, bool, error) {
	secs, err := readSections(b)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for k, s := range secs {
		var body []byte
		var ch bool
		switch s.id {
		case 1:
			var img *memImage
			if counts != nil {
				body, img = imageModule(s.body, counts)
			}
			if img != nil {
				*imgs = append(*imgs, *img)
				ch = true
			} else {
				body, ch = coalesceModule(s.body)
			}
		case 4:
			body, ch, err = rewriteComponent(s.body, counts, imgs)
			if err != nil {
				return nil, false, err
			}
		}
		if ch {
			secs[k].body, changed = body, true
		}
	}
	if !changed {
		return b, false, nil
	}
	return writeSections(b[:8], secs), true, nil
}

// imageModule returns the module without its data section and its image,
// or a nil image when it does not qualify (see the rules above).
func imageModule(b []byte, counts map[memType]int) ([]byte, *memImage) {
	if !bytes.HasPrefix(b, coreHeader) {
		return nil, nil
	}
	secs, err := readSections(b)
	if err != nil {
		return nil, nil
	}
	dataAt := -1
	var types []memType
	for k, s := range secs {
		switch s.id {
		case secDataCount:
			return nil, nil
		case secMemory:
			t, ok := readMemories(s.body)
			if !ok {
				return nil, nil
			}
			types = append(types, t...)
		case secImport:
			if importsMemory(s.body) {
				return nil, nil
			}
		case secData:
			dataAt = k
		}
	}
	if dataAt < 0 || len(types) != 1 || counts[types[0]] != 1 {
		return nil, nil
	}
	segs, ok := readData(secs[dataAt].body)
	if !ok || len(segs) == 0 {
		return nil, nil
	}
	limit := types[0].minPages * 65536
	lo, hi, total := ^uint64(0), uint64(0), 0
	for _, s := range segs {
		end := uint64(s.off) + uint64(len(s.data))
		if end > limit {
			return nil, nil
		}
		lo, hi, total = min(lo, uint64(s.off)), max(hi, end), total+len(s.data)
	}
	// From a wasm page boundary: page-aligned for any host page size.
	lo &^= 65535
	// Sparse data is left to be copied: the image spans every gap, and a
	// hostile module could otherwise make us allocate gigabytes of zeros.
	if total < imageMinBytes || hi <= lo || hi-lo > 2*uint64(total)+1<<20 || hi-lo > maxImageBytes {
		return nil, nil
	}
	data := make([]byte, hi-lo)
	for _, s := range segs {
		copy(data[uint64(s.off)-lo:], s.data)
	}
	secs = append(secs[:dataAt:dataAt], secs[dataAt+1:]...)
	return writeSections(b[:8], secs), &memImage{memType: types[0], off: lo, size: uint64(len(data)), data: data}
}

// bindImages registers imgs for cc, so every instantiation of cc maps them
// (shim.c). Without a file, each image's bytes go to a sealed memfd of its
// own. With one (a cache entry's verified .img, whose identity id was
// checked against its MAC), the images are mapped from the file itself at
// their offsets, and every memory made from them first checks that the
// file's identity is still id (see RATIONALE.md, "Compile cache"). The
// descriptors returned are the component's, closed by unbindImages.
func bindImages(cc *C.wasmtime_component_t, imgs []memImage, file *os.File, id []byte) ([]C.int, error) {
	if len(imgs) == 0 {
		return nil, nil
	}
	page := uint64(os.Getpagesize())
	cimgs := make([]C.wh_image, len(imgs))
	fds := make([]C.int, 0, len(imgs))
	fail := func(err error) ([]C.int, error) {
		for _, fd := range fds {
			C.close(fd)
		}
		return nil, err
	}
	var st syscall.Stat_t
	if file != nil {
		// F_DUPFD_CLOEXEC: a process started meanwhile never inherits it.
		fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, file.Fd(), syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			return fail(fmt.Errorf("cannot keep the memory images open: %w", errno))
		}
		fds = append(fds, C.int(fd))
		if now, _, err := fileIdentity(file); err != nil || !bytes.Equal(now, id) {
			return fail(errors.New("the memory images changed while they were loaded"))
		}
		if err := syscall.Fstat(int(fd), &st); err != nil {
			return fail(err)
		}
	}
	for k, im := range imgs {
		if im.off%page != 0 || im.size == 0 || im.fileOff%page != 0 {
			return fail(errors.New("a memory image is not page-aligned on this host"))
		}
		n := (im.size + page - 1) / page * page
		ci := C.wh_image{min_pages: C.uint64_t(im.minPages), max_pages: C.uint64_t(im.maxPages),
			off: C.size_t(im.off), len: C.size_t(n)}
		if file != nil {
			ci.fd, ci.file_off, ci.check = fds[0], C.int64_t(im.fileOff), 1
			ci.dev, ci.ino, ci.size = C.uint64_t(st.Dev), C.uint64_t(st.Ino), C.int64_t(st.Size)
			ci.mtime_s, ci.mtime_ns = C.int64_t(st.Mtim.Sec), C.int64_t(st.Mtim.Nsec)
			ci.ctime_s, ci.ctime_ns = C.int64_t(st.Ctim.Sec), C.int64_t(st.Ctim.Nsec)
		} else {
			fd, err := C.wh_image_fd((*C.uint8_t)(unsafe.Pointer(&im.data[0])), C.size_t(len(im.data)), C.size_t(n))
			if fd < 0 {
				return fail(fmt.Errorf("cannot make a memory image: %w", err))
			}
			fds = append(fds, fd)
			ci.fd = fd
		}
		cimgs[k] = ci
	}
	if C.wh_images_register(cc, &cimgs[0], C.int(len(cimgs))) != 0 {
		return fail(syscall.ENOMEM)
	}
	return fds, nil
}

// unbindImages undoes bindImages (before cc is deleted).
func unbindImages(cc *C.wasmtime_component_t, fds []C.int) {
	if fds == nil {
		return
	}
	C.wh_images_unregister(cc)
	for _, fd := range fds {
		C.close(fd)
	}
}

// imageAlign is where each image starts in a cache entry's .img file: a
// multiple of any host page size, so it can be mapped from there.
const imageAlign = 65536

// imageFileLayout sets each image's offset in the .img file and returns the
// file's size.
func imageFileLayout(imgs []memImage) uint64 {
	var at uint64
	for k := range imgs {
		imgs[k].fileOff = at
		at += (imgs[k].size + imageAlign - 1) / imageAlign * imageAlign
	}
	return at
}

// encodePlan is what the cache keeps (MACed) about a component's images:
// per image its memory type, offset and length; the bytes go to the .img
// file in the same order, each from a multiple of imageAlign
// (imageFileLayout).
func encodePlan(imgs []memImage) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(imgs)))
	for _, im := range imgs {
		for _, v := range []uint64{im.minPages, im.maxPages, im.off, im.size} {
			out = binary.LittleEndian.AppendUint64(out, v)
		}
	}
	return out
}

// maxImages bounds a plan read back from the cache.
const maxImages = 64

// decodePlan reads encodePlan's output: the images without their bytes
// (their offsets in the .img file set), and how large that file must be.
func decodePlan(b []byte) ([]memImage, uint64, bool) {
	if len(b) < 4 {
		return nil, 0, false
	}
	n := binary.LittleEndian.Uint32(b)
	if n > maxImages || uint64(len(b)) != 4+uint64(n)*32 {
		return nil, 0, false
	}
	imgs := make([]memImage, n)
	for k := range imgs {
		p := b[4+32*k:]
		v := func(i int) uint64 { return binary.LittleEndian.Uint64(p[8*i:]) }
		if v(3) == 0 || v(3) > 1<<32 || v(2) > 1<<32 {
			return nil, 0, false
		}
		imgs[k] = memImage{memType: memType{v(0), v(1)}, off: v(2), size: v(3)}
	}
	return imgs, imageFileLayout(imgs), true
}

// dropKeptReservations unmaps the memory reservations kept for reuse, so a
// test decides which one the next memory gets.
func dropKeptReservations() { C.wh_resv_drop_all() }

// setImageHuge says whether memories with an image use huge pages (the
// default) or 4 KiB pages: for benchmarks comparing the two.
func setImageHuge(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.wh_set_image_huge(v)
}

// setScrub says whether freed memories are restored in place (the default)
// or wiped with MADV_DONTNEED: for tests and benchmarks comparing the two.
func setScrub(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.wh_set_scrub(v)
}
