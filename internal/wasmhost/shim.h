// C side of internal/wasmhost: the parts that must not call into Go on hot or
// fragile paths (the epoch callback, linear memory), and the trampolines that
// turn wasmtime callbacks into calls of exported Go functions.
#ifndef MURMUR_WASMHOST_SHIM_H
#define MURMUR_WASMHOST_SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <wasi.h>
#include <wasmtime.h>

// Why a run was stopped by the epoch callback.
#define WH_STOP_NONE 0
#define WH_STOP_DEADLINE 1
#define WH_STOP_MEMORY 2
#define WH_STOP_CANCEL 3

// wh_run is the per-store state shared by C callbacks and Go. It lives in C
// memory (it is reachable from wasmtime callbacks on any thread) and is freed
// by Go after the store is deleted.
typedef struct wh_run {
  uintptr_t gohandle;    // runtime/cgo.Handle of the Go *run
  int64_t mem_limit;     // bytes, total over every linear memory of the store
  int64_t mem_used;      // bytes currently accessible
  int64_t mem_peak;      // high-water mark of mem_used
  int64_t refused;       // memory creations/growths refused for the limit
  int64_t deadline_ns;   // CLOCK_MONOTONIC deadline of the current call, 0 = none
  int64_t late_ns;       // a stop later than deadline+late_ns counts as "late"
  int32_t stop;          // WH_STOP_* set by the epoch callback
  int32_t late;          // the deadline stop came late (the guest was blocked)
  int32_t cancel;        // set (atomically) when the caller's context ends
  int32_t memories;      // live memories bound to this run
  void *mem0;            // the run's first memory (the component's own), NULL: none
} wh_run;

int64_t wh_now(void);
// wh_coarse_realtime is CLOCK_REALTIME_COARSE in ns: the clock file
// timestamps are taken from.
int64_t wh_coarse_realtime(void);
wh_run *wh_run_new(void);
void wh_run_free(wh_run *r);
void wh_run_cancel(wh_run *r);
void wh_run_arm(wh_run *r, int64_t deadline_ns);

void wh_config_memory(wasm_config_t *cfg);
// wh_run_read copies len bytes at ptr of the run's first memory into dst:
// 0, or -1 when the range is outside its accessible bytes (or it has none).
int wh_run_read(wh_run *r, uint32_t ptr, uint32_t len, uint8_t *dst);

// wh_image is the initial content of one core module's linear memory, built
// at compile time from its (then removed) data segments: a sealed memfd or
// a verified cache file mapped MAP_PRIVATE over the start of every new
// memory of its type, so pages fault in copy-on-write instead of being
// zeroed and copied.
typedef struct wh_image {
  uint64_t id;         // unique in the process, never reused
  int fd;              // sealed memfd, or the cache's .img file (check)
  uint64_t min_pages;  // the memory type (wasm pages) it belongs to
  uint64_t max_pages;  // UINT64_MAX: no maximum
  size_t off;          // offset in linear memory (page multiple)
  size_t len;          // bytes mapped (page multiple, <= the minimum - off)
  int64_t file_off;    // where in fd the image starts (page multiple)
  // check: fd is a cache file, not a sealed memfd; every memory created
  // from it first checks that fd's identity is still the one verified.
  int check;
  uint64_t dev, ino;
  int64_t size, mtime_s, mtime_ns, ctime_s, ctime_ns;
  const uint8_t *src;  // set by wh_images_register: a read-only view of fd
} wh_image;

// wh_image_fd makes the sealed memfd of an image: n bytes of p, padded
// with zeros to len. -1 (errno set) on failure.
int wh_image_fd(const uint8_t *p, size_t n, size_t len);
// wh_images_register binds n images (copied; ids assigned) to a compiled
// component: every instantiation of it maps them. 0, or -1 when out of memory.
int wh_images_register(const wasmtime_component_t *c, const wh_image *imgs, int n);
void wh_images_unregister(const wasmtime_component_t *c);
// wh_image_huge: whether a memory that gets an image is still placed for
// huge pages (1, the default) or uses 4 KiB pages (0). For benchmarks.
void wh_set_image_huge(int on);
// wh_resv_drop_all unmaps every kept reservation (tests: the next memory
// then takes the reservation they hand over, not an older one).
void wh_resv_drop_all(void);
// wh_set_scrub: whether freed memories are restored in place (1, the
// default) or wiped with MADV_DONTNEED (0). For tests and benchmarks.
void wh_set_scrub(int on);
void wh_store_setup(wasmtime_store_t *store, wh_run *r);

wasmtime_error_t *wh_instantiate(const wasmtime_component_linker_t *linker,
                                 wasmtime_context_t *ctx,
                                 const wasmtime_component_t *comp,
                                 wasmtime_component_instance_t *out,
                                 wh_run *r);

wasmtime_error_t *wh_add_func(wasmtime_component_linker_instance_t *li,
                              const char *name, size_t len, uintptr_t slot);
wasmtime_error_t *wh_add_resource(wasmtime_component_linker_instance_t *li,
                                  const char *name, size_t len,
                                  const wasmtime_component_resource_type_t *ty,
                                  uintptr_t slot);

// Value helpers: Go cannot take the address of C unions portably.
wasmtime_component_val_t *wh_val_box(wasmtime_component_val_t *v);
bool wh_set_argv(wasi_config_t *cfg, size_t n, char **argv);
bool wh_set_env(wasi_config_t *cfg, size_t n, char **names, char **values);
void wh_set_stdin(wasi_config_t *cfg, const uint8_t *p, size_t n);
// which: 1 stdout, 2 stderr; fd is duplicated (the caller keeps its own).
bool wh_set_output_fd(wasi_config_t *cfg, int which, int fd);

#endif
