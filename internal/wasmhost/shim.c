// See shim.h. Nothing here calls Go except the two trampolines at the end.
#define _GNU_SOURCE  // memfd_create
#include "shim.h"
#include "_cgo_export.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t wh_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t wh_coarse_realtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

wh_run *wh_run_new(void) { return calloc(1, sizeof(wh_run)); }
void wh_run_free(wh_run *r) { free(r); }

void wh_run_cancel(wh_run *r) { __atomic_store_n(&r->cancel, 1, __ATOMIC_SEQ_CST); }

void wh_run_arm(wh_run *r, int64_t deadline_ns) {
  r->deadline_ns = deadline_ns;
  r->stop = WH_STOP_NONE;
  r->late = 0;
  __atomic_store_n(&r->cancel, 0, __ATOMIC_SEQ_CST);
}

// ---- epoch callback ------------------------------------------------------
//
// The engine's epoch advances every tick (Go ticker). Each store keeps its
// epoch deadline one tick ahead, so this runs once per tick while the guest
// executes its own code; it decides in C (no Go call) whether to stop.
static wasmtime_error_t *wh_epoch_cb(wasmtime_context_t *ctx, void *data,
                                     uint64_t *delta,
                                     wasmtime_update_deadline_kind_t *kind) {
  (void)ctx;
  wh_run *r = data;
  *kind = WASMTIME_UPDATE_DEADLINE_CONTINUE;
  if (r->refused > 0) {
    r->stop = WH_STOP_MEMORY;
    return wasmtime_error_new("murmur: memory limit reached");
  }
  if (__atomic_load_n(&r->cancel, __ATOMIC_SEQ_CST)) {
    r->stop = WH_STOP_CANCEL;
    return wasmtime_error_new("murmur: run cancelled");
  }
  if (r->deadline_ns > 0) {
    int64_t now = wh_now();
    if (now >= r->deadline_ns) {
      r->stop = WH_STOP_DEADLINE;
      if (now - r->deadline_ns > r->late_ns) r->late = 1;
      return wasmtime_error_new("murmur: deadline exceeded");
    }
  }
  *delta = 1;
  return NULL;
}

void wh_store_setup(wasmtime_store_t *store, wh_run *r) {
  wasmtime_store_epoch_deadline_callback(store, wh_epoch_cb, r, NULL);
}

// ---- linear memory -------------------------------------------------------
//
// wasmtime's store limiter only makes a refused memory.grow return -1; the
// guest then fails in its own way and the host cannot tell why. Owning the
// linear memory lets us charge every growth to the run's budget and record a
// refusal, so the ending can be classified as a resource limit.

static __thread wh_run *wh_cur_run;

// ---- memory images ----------------------------------------------------------
//
// A component's images are kept in a small process-wide registry keyed by
// the compiled component, so every path that instantiates it (a run, the
// helpers) binds them: its modules' data segments are gone, and a memory of
// an imaged type created without its image would be wrong, not just slow.
// A memory gets the image whose memory type it has; compile time made sure
// no other core module of the component defines a memory of that type.

typedef struct wh_imgset {
  const wasmtime_component_t *comp;
  int n;
  wh_image *img;
  struct wh_imgset *next;
} wh_imgset;

static pthread_mutex_t wh_img_mu = PTHREAD_MUTEX_INITIALIZER;
static wh_imgset *wh_imgsets;
static uint64_t wh_img_next_id = 1;
static int wh_img_huge = 1;
static __thread const wh_imgset *wh_cur_imgs;

void wh_set_image_huge(int on) { __atomic_store_n(&wh_img_huge, on, __ATOMIC_SEQ_CST); }

int wh_image_fd(const uint8_t *p, size_t n, size_t len) {
  int fd = memfd_create("murmur-memory-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      goto fail;
    }
    done += (size_t)w;
  }
  if (ftruncate(fd, (off_t)len) != 0) goto fail;
  // Sealed: nothing, not even this process, changes the image once runs map it.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) goto fail;
  return fd;
fail:;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

int wh_images_register(const wasmtime_component_t *c, const wh_image *imgs, int n) {
  wh_imgset *s = calloc(1, sizeof *s);
  wh_image *copy = calloc((size_t)n, sizeof *copy);
  if (s == NULL || copy == NULL) {
    free(s);
    free(copy);
    return -1;
  }
  memcpy(copy, imgs, (size_t)n * sizeof *copy);
  for (int i = 0; i < n; i++) {
    // A read-only view of the image, to restore the pages a run wrote
    // (wh_scrub); NULL means those memories are wiped with MADV_DONTNEED.
    void *src = mmap(NULL, copy[i].len, PROT_READ, MAP_PRIVATE, copy[i].fd, copy[i].file_off);
    copy[i].src = src == MAP_FAILED ? NULL : src;
  }
  s->comp = c;
  s->n = n;
  s->img = copy;
  pthread_mutex_lock(&wh_img_mu);
  for (int i = 0; i < n; i++) copy[i].id = wh_img_next_id++;
  s->next = wh_imgsets;
  wh_imgsets = s;
  pthread_mutex_unlock(&wh_img_mu);
  return 0;
}

void wh_images_unregister(const wasmtime_component_t *c) {
  pthread_mutex_lock(&wh_img_mu);
  for (wh_imgset **pp = &wh_imgsets; *pp != NULL; pp = &(*pp)->next) {
    if ((*pp)->comp == c) {
      wh_imgset *s = *pp;
      *pp = s->next;
      pthread_mutex_unlock(&wh_img_mu);
      // The descriptors are the caller's; mappings of them in kept
      // reservations hold their own references.
      for (int i = 0; i < s->n; i++) {
        if (s->img[i].src != NULL) munmap((void *)s->img[i].src, s->img[i].len);
      }
      free(s->img);
      free(s);
      return;
    }
  }
  pthread_mutex_unlock(&wh_img_mu);
}

// wh_images_of is the registry entry of c, or NULL. An entry lives as long
// as its component, which outlives every instantiation of it.
static const wh_imgset *wh_images_of(const wasmtime_component_t *c) {
  const wh_imgset *found = NULL;
  pthread_mutex_lock(&wh_img_mu);
  for (const wh_imgset *s = wh_imgsets; s != NULL; s = s->next) {
    if (s->comp == c) {
      found = s;
      break;
    }
  }
  pthread_mutex_unlock(&wh_img_mu);
  return found;
}

// wh_image_unchanged: the cache file behind img has the identity verified at
// load (any write, truncation or replacement changes its size or ctime).
static bool wh_image_unchanged(const wh_image *img) {
  struct stat st;
  if (fstat(img->fd, &st) != 0) return false;
  return (uint64_t)st.st_dev == img->dev && (uint64_t)st.st_ino == img->ino &&
         (int64_t)st.st_size == img->size && (int64_t)st.st_mtim.tv_sec == img->mtime_s &&
         (int64_t)st.st_mtim.tv_nsec == img->mtime_ns && (int64_t)st.st_ctim.tv_sec == img->ctime_s &&
         (int64_t)st.st_ctim.tv_nsec == img->ctime_ns;
}

// wh_image_for is the image for a new memory of type ty, or NULL.
static const wh_image *wh_image_for(const wasm_memorytype_t *ty) {
  const wh_imgset *s = wh_cur_imgs;
  if (s == NULL || ty == NULL || wasmtime_memorytype_is64(ty) || wasmtime_memorytype_isshared(ty)) {
    return NULL;
  }
  uint64_t min = wasmtime_memorytype_minimum(ty), max = UINT64_MAX;
  if (!wasmtime_memorytype_maximum(ty, &max)) max = UINT64_MAX;
  for (int i = 0; i < s->n; i++) {
    if (s->img[i].min_pages == min && s->img[i].max_pages == max) return &s->img[i];
  }
  return NULL;
}

typedef struct wh_mem {
  wh_run *run;
  uint8_t *map;      // start of the whole mapping (pre-guard included)
  size_t map_len;
  uint8_t *base;     // start of the linear memory
  size_t size;       // accessible bytes
  size_t cap;        // bytes the memory may grow to in place
  size_t guard;      // the guard size asked for (the reservation's geometry)
  int huge;
  size_t shift;      // huge: base + shift is on a 2 MiB boundary (see wh_mem_new)
  // The image mapped over [base+img_off, +img_len), 0 for none: pages there
  // come from the image's memfd or cache file, copy-on-write.
  uint64_t img_id;
  size_t img_off, img_len;
  const uint8_t *img_src;  // the image's read-only view (NULL: none or unavailable)
} wh_mem;

static size_t wh_page(void) {
  static size_t p;
  if (!p) p = (size_t)sysconf(_SC_PAGESIZE);
  return p;
}

// Memories at least this large start on a 2 MiB boundary and ask for huge
// pages (see wh_mem_new).
#define WH_HUGE_MIN ((size_t)1 << 20)
#define WH_HUGE ((size_t)2 << 20)

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static uint8_t *wh_mem_get(void *env, size_t *byte_size, size_t *byte_capacity) {
  wh_mem *m = env;
  *byte_size = m->size;
  *byte_capacity = m->cap;
  return m->base;
}

static wasmtime_error_t *wh_mem_grow(void *env, size_t new_size) {
  wh_mem *m = env;
  if (new_size <= m->size) return NULL;
  size_t add = new_size - m->size;
  if (new_size > m->cap || m->run->mem_used + (int64_t)add > m->run->mem_limit) {
    m->run->refused++;
    return wasmtime_error_new("murmur: memory limit reached");
  }
  // Only the pages added: from the base, mprotect walks every VMA of the
  // memory (the image's among them) on each of a Go guest's many small grows.
  size_t from = round_up(m->size, wh_page()), to = round_up(new_size, wh_page());
  if (to > from && mprotect(m->base + from, to - from, PROT_READ | PROT_WRITE) != 0) {
    return wasmtime_error_new("murmur: mprotect failed while growing memory");
  }
  m->size = new_size;
  m->run->mem_used += (int64_t)add;
  if (m->run->mem_used > m->run->mem_peak) m->run->mem_peak = m->run->mem_used;
  return NULL;
}

// ---- reservations kept for reuse --------------------------------------------
//
// A run's memory is a multi-GiB PROT_NONE reservation; creating and
// unmapping one per instantiation was the largest single cost of a small
// tool call (munmap of the 4 GiB region and its page tables, ~18 % of a WAT
// invoke). A freed reservation is instead wiped — madvise(MADV_DONTNEED)
// over its accessible pages, which drops them, so the next touch of a
// private anonymous page reads zeros — and kept for the next memory of the
// same geometry, whose accessible part is then set to exactly its own
// minimum (one mprotect at most; none when it matches). Nothing of one run
// survives into the next: its pages are gone, not merely protected, and
// beyond the new memory's size everything is PROT_NONE again.

#define WH_KEEP 8

typedef struct wh_resv {
  uint8_t *map;
  size_t len, guard, cap;
  int huge;
  size_t shift;
  size_t acc;  // bytes accessible from the memory's base (page multiple)
  uint64_t img_id;  // the image still mapped in it (its copies dropped), or 0
  size_t img_off, img_len;
} wh_resv;

static pthread_mutex_t wh_resv_mu = PTHREAD_MUTEX_INITIALIZER;
static wh_resv wh_resv_kept[WH_KEEP];
static int wh_resv_n;

// wh_resv_take finds a kept reservation of this geometry (true, *out set),
// preferring one that still maps image img_id (then nothing is remapped).
static bool wh_resv_take(size_t len, size_t guard, size_t cap, int huge, size_t shift,
                         uint64_t img_id, wh_resv *out) {
  int at = -1;
  pthread_mutex_lock(&wh_resv_mu);
  for (int i = wh_resv_n - 1; i >= 0; i--) {
    wh_resv *k = &wh_resv_kept[i];
    if (k->len == len && k->guard == guard && k->cap == cap && k->huge == huge && k->shift == shift) {
      if (at < 0 || k->img_id == img_id) at = i;
      if (k->img_id == img_id) break;
    }
  }
  if (at >= 0) {
    *out = wh_resv_kept[at];
    wh_resv_kept[at] = wh_resv_kept[--wh_resv_n];
  }
  pthread_mutex_unlock(&wh_resv_mu);
  return at >= 0;
}

// ---- scrubbing in place ------------------------------------------------------
//
// Dropping a run's pages (MADV_DONTNEED) makes the next run fault every page
// it touches back in: allocate, zero, charge, map — about a quarter of a
// Go-kit call, for the same ~100-200 pages every time. Instead a memory's
// pages are restored in place: /proc/self/pagemap says which pages of it are
// present and which are still the image's own file pages; every other
// present page is set back to what a fresh memory holds there (the image's
// bytes over the image, zeros elsewhere) and stays mapped, so the next run
// writes it without a fault. A page not present reads as fresh anyway (zero,
// or the image). Past WH_RESIDENT_MAX present bytes, for a memory larger
// than WH_SCAN_MAX (its pagemap alone would cost more than the wipe), or
// when pagemap cannot be read, the memory is wiped with MADV_DONTNEED as
// before.

#define WH_RESIDENT_MAX ((size_t)32 << 20)
#define WH_SCAN_MAX ((size_t)256 << 20)
#define PM_PRESENT (1ULL << 63)
#define PM_SWAP (1ULL << 62)
#define PM_FILE (1ULL << 61)

static int wh_pagemap_fd = -1;
static pthread_once_t wh_pagemap_once = PTHREAD_ONCE_INIT;
static int wh_scrub_off;

static void wh_pagemap_open(void) { wh_pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC); }

void wh_set_scrub(int on) { __atomic_store_n(&wh_scrub_off, !on, __ATOMIC_SEQ_CST); }

// wh_scrub restores [m->base, +acc) to a fresh memory's content in place; 0
// when done, -1 when the caller must wipe it instead (nothing was changed
// that a wipe does not undo).
static int wh_scrub(wh_mem *m, size_t acc) {
  if (__atomic_load_n(&wh_scrub_off, __ATOMIC_SEQ_CST)) return -1;
  if ((m->img_id != 0 && m->img_src == NULL) || acc > WH_SCAN_MAX) return -1;
  pthread_once(&wh_pagemap_once, wh_pagemap_open);
  if (wh_pagemap_fd < 0) return -1;
  size_t page = wh_page(), n = acc / page;
  uint64_t *pm = malloc(n * sizeof *pm);
  if (pm == NULL) return -1;
  off_t at = (off_t)((uintptr_t)m->base / page * sizeof *pm);
  size_t want = n * sizeof *pm, got = 0;
  while (got < want) {
    ssize_t k = pread(wh_pagemap_fd, (char *)pm + got, want - got, at + (off_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      free(pm);
      return -1;
    }
    got += (size_t)k;
  }
  size_t present = 0;
  for (size_t i = 0; i < n; i++) {
    if (pm[i] & (PM_PRESENT | PM_SWAP)) present++;
  }
  if (present * page > WH_RESIDENT_MAX) {
    free(pm);
    return -1;
  }
  size_t ilo = m->img_off / page, ihi = (m->img_off + m->img_len) / page;
  // Each page is left (0: not present, or the image's own unwritten file
  // page), zeroed (1) or copied back from the image (2); runs of one kind
  // are restored together.
#define WH_KIND(i)                                                                     \
  (!(pm[i] & (PM_PRESENT | PM_SWAP))                                                   \
       ? 0                                                                             \
       : (m->img_id != 0 && (i) >= ilo && (i) < ihi) ? ((pm[i] & PM_FILE) ? 0 : 2) : 1)
  for (size_t i = 0; i < n;) {
    int kind = WH_KIND(i);
    size_t j = i + 1;
    while (j < n && WH_KIND(j) == kind) j++;
    uint8_t *p = m->base + i * page;
    if (kind == 1) memset(p, 0, (j - i) * page);
    if (kind == 2) memcpy(p, m->img_src + (i - ilo) * page, (j - i) * page);
    i = j;
  }
#undef WH_KIND
  free(pm);
  return 0;
}

// wh_resv_put wipes m's pages and keeps its reservation, or unmaps it when
// the wipe fails or enough are kept. Over an image, MADV_DONTNEED drops the
// run's private copies: the next touch reads the image again, so a
// reservation kept with its image mapped is pristine for the next memory of
// that image (and remapped anonymous for any other, see wh_mem_new).
static void wh_resv_put(wh_mem *m) {
  pthread_mutex_lock(&wh_resv_mu);
  bool room = wh_resv_n < WH_KEEP;
  pthread_mutex_unlock(&wh_resv_mu);
  if (!room) {
    // Enough kept already (another may free one meanwhile: then one fewer
    // is kept, never a dirty one): no restoring for nothing.
    munmap(m->map, m->map_len);
    return;
  }
  size_t acc = round_up(m->size, wh_page());
  if (acc > 0 && wh_scrub(m, acc) != 0 && madvise(m->base, acc, MADV_DONTNEED) != 0) {
    munmap(m->map, m->map_len);
    return;
  }
  pthread_mutex_lock(&wh_resv_mu);
  if (wh_resv_n < WH_KEEP) {
    wh_resv_kept[wh_resv_n++] = (wh_resv){m->map,   m->map_len, m->guard,  m->cap,    m->huge,
                                          m->shift, acc,        m->img_id, m->img_off, m->img_len};
    m = NULL;
  }
  pthread_mutex_unlock(&wh_resv_mu);
  if (m != NULL) munmap(m->map, m->map_len);
}

void wh_resv_drop_all(void) {
  pthread_mutex_lock(&wh_resv_mu);
  for (int i = 0; i < wh_resv_n; i++) munmap(wh_resv_kept[i].map, wh_resv_kept[i].len);
  wh_resv_n = 0;
  pthread_mutex_unlock(&wh_resv_mu);
}

static void wh_mem_free(void *env) {
  wh_mem *m = env;
  if (m->run->mem0 == m) m->run->mem0 = NULL;
  m->run->mem_used -= (int64_t)m->size;
  m->run->memories--;
  wh_resv_put(m);
  free(m);
}

static wasmtime_error_t *wh_mem_new(void *env, const wasm_memorytype_t *ty,
                                    size_t minimum, size_t maximum,
                                    size_t reserved, size_t guard,
                                    wasmtime_linear_memory_t *ret) {
  (void)env;
  (void)ty;
  wh_run *r = wh_cur_run;
  if (r == NULL) {
    // Every instantiation goes through wh_instantiate; a memory created
    // elsewhere would escape the budget, so refuse it.
    return wasmtime_error_new("murmur: linear memory created outside a run");
  }
  if ((int64_t)minimum > r->mem_limit - r->mem_used) {
    r->refused++;
    return wasmtime_error_new("murmur: memory limit reached");
  }
  size_t page = wh_page();
  size_t cap;
  if (reserved != 0) {
    // Compiled code elides bounds checks against this reservation: honour it.
    cap = reserved;
  } else {
    cap = round_up((size_t)r->mem_limit, 65536);
    if (maximum < cap) cap = maximum;
    if (cap < minimum) cap = minimum;
  }
  cap = round_up(cap, page);
  guard = round_up(guard, page);
  const wh_image *img = wh_image_for(ty);
  if (img != NULL && (img->off + img->len > round_up(minimum, page) || img->len % page || img->off % page)) {
    return wasmtime_error_new("murmur: a memory image does not fit its memory");
  }
  if (img != NULL && img->check && !wh_image_unchanged(img)) {
    // Mapped pages come from the cache file itself: one written since its
    // MAC was checked is not used.
    return wasmtime_error_new("murmur: a memory image in the compile cache changed since it was verified");
  }
  int huge = minimum >= WH_HUGE_MIN && (img == NULL || __atomic_load_n(&wh_img_huge, __ATOMIC_SEQ_CST));
  size_t len = guard + cap + guard + (huge ? WH_HUGE : 0);
  // With an image, the anonymous memory after it is what starts on a huge
  // page boundary (the image's own pages are 4 KiB file pages): placed
  // there, the Go heap right after the data faults in 2 MiB at a time.
  size_t shift = huge && img != NULL ? (img->off + img->len) % WH_HUGE : 0;
  wh_resv kept;
  bool reused = wh_resv_take(len, guard, cap, huge, shift, img ? img->id : 0, &kept);
  void *map = reused ? kept.map
                     : mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) {
    return wasmtime_error_new("murmur: cannot reserve address space for a linear memory");
  }
  uint8_t *base = (uint8_t *)map + guard;
  if (huge) {
    // The extra 2 MiB reserved lets base + shift fall on a huge-page
    // boundary; the guard before it only grows.
    base = (uint8_t *)(round_up((size_t)base + shift, WH_HUGE) - shift);
  }
  // A large memory (a Go guest's heap and data) is faulted in 2 MiB at a
  // time instead of 4 KiB: fewer page faults while its data segments are
  // copied and its runtime starts. Small memories keep 4 KiB pages (a huge
  // page would zero 2 MiB for a few KiB used).
  // (A kept reservation has it already: madvise flags outlive the wipe.)
  size_t need = round_up(minimum, page), acc = reused ? kept.acc : 0;
  if (huge && !reused) madvise(base, cap, MADV_HUGEPAGE);
  uint64_t have = reused ? kept.img_id : 0;
  if (have != 0 && (img == NULL || img->id != have)) {
    // Another image (or none) from now on: the old one's range becomes
    // fresh anonymous memory again, accessible as the rest of acc is.
    void *p = mmap(base + kept.img_off, kept.img_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      munmap(map, len);
      return wasmtime_error_new("murmur: cannot reset a kept linear memory");
    }
    if (huge) madvise(base + kept.img_off, kept.img_len, MADV_HUGEPAGE);
    have = 0;
  }
  int prot_err = 0;
  if (need > acc) {
    prot_err = mprotect(base + acc, need - acc, PROT_READ | PROT_WRITE);
  } else if (need < acc) {
    prot_err = mprotect(base + need, acc - need, PROT_NONE);
  }
  if (prot_err != 0) {
    munmap(map, len);
    return wasmtime_error_new("murmur: mprotect failed for a new linear memory");
  }
  if (img != NULL && have != img->id) {
    void *p = mmap(base + img->off, img->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                   img->fd, img->file_off);
    if (p == MAP_FAILED) {
      munmap(map, len);
      return wasmtime_error_new("murmur: cannot map the memory image");
    }
  }
  wh_mem *m = calloc(1, sizeof(wh_mem));
  m->run = r;
  m->map = map;
  m->map_len = len;
  m->base = base;
  m->size = minimum;
  m->cap = cap;
  m->guard = guard;
  m->huge = huge;
  m->shift = shift;
  if (img != NULL) {
    m->img_id = img->id;
    m->img_off = img->off;
    m->img_len = img->len;
    m->img_src = img->src;
  }
  r->mem_used += (int64_t)minimum;
  if (r->mem_used > r->mem_peak) r->mem_peak = r->mem_used;
  r->memories++;
  if (r->mem0 == NULL) r->mem0 = m;
  ret->env = m;
  ret->get_memory = wh_mem_get;
  ret->grow_memory = wh_mem_grow;
  ret->finalizer = wh_mem_free;
  return NULL;
}

int wh_run_read(wh_run *r, uint32_t ptr, uint32_t len, uint8_t *dst) {
  wh_mem *m = r->mem0;
  if (m == NULL || (uint64_t)ptr + len > m->size) return -1;
  if (len) memcpy(dst, m->base + ptr, len);
  return 0;
}

void wh_config_memory(wasm_config_t *cfg) {
  wasmtime_memory_creator_t mc;
  memset(&mc, 0, sizeof mc);
  mc.new_memory = wh_mem_new;
  wasmtime_config_host_memory_creator_set(cfg, &mc);
  // Required with a custom creator: wasmtime's own copy-on-write images
  // would abort. Ours (wh_image) take their place for the modules they fit.
  wasmtime_config_memory_init_cow_set(cfg, false);
}

wasmtime_error_t *wh_instantiate(const wasmtime_component_linker_t *linker,
                                 wasmtime_context_t *ctx,
                                 const wasmtime_component_t *comp,
                                 wasmtime_component_instance_t *out,
                                 wh_run *r) {
  // Memories get no store pointer at creation: bind them to this run through a
  // thread-local, restoring the outer value for nested instantiations.
  wh_run *prev = wh_cur_run;
  const wh_imgset *prev_imgs = wh_cur_imgs;
  wh_cur_run = r;
  wh_cur_imgs = wh_images_of(comp);
  wasmtime_error_t *err = wasmtime_component_linker_instantiate(linker, ctx, comp, out);
  wh_cur_run = prev;
  wh_cur_imgs = prev_imgs;
  return err;
}

// ---- trampolines into Go -------------------------------------------------

static wasmtime_error_t *wh_host_tramp(void *env, wasmtime_context_t *ctx,
                                       const wasmtime_component_func_type_t *ty,
                                       wasmtime_component_val_t *args, size_t nargs,
                                       wasmtime_component_val_t *results, size_t nresults) {
  (void)ty;
  return whHostCall((uintptr_t)env, ctx, args, nargs, results, nresults);
}

wasmtime_error_t *wh_add_func(wasmtime_component_linker_instance_t *li,
                              const char *name, size_t len, uintptr_t slot) {
  return wasmtime_component_linker_instance_add_func(li, name, len, wh_host_tramp,
                                                     (void *)slot, NULL);
}

static wasmtime_error_t *wh_resource_dtor(void *env, wasmtime_context_t *ctx, uint32_t rep) {
  return whResourceDrop((uintptr_t)env, ctx, rep);
}

wasmtime_error_t *wh_add_resource(wasmtime_component_linker_instance_t *li,
                                  const char *name, size_t len,
                                  const wasmtime_component_resource_type_t *ty,
                                  uintptr_t slot) {
  return wasmtime_component_linker_instance_add_resource(li, name, len, ty, wh_resource_dtor,
                                                         (void *)slot, NULL);
}

// ---- small helpers --------------------------------------------------------

wasmtime_component_val_t *wh_val_box(wasmtime_component_val_t *v) {
  return wasmtime_component_val_new(v);
}

static const char *wh_empty[1] = {""};

bool wh_set_argv(wasi_config_t *cfg, size_t n, char **argv) {
  // A NULL array with n == 0 is undefined behaviour on the Rust side.
  return wasi_config_set_argv(cfg, n, n ? (const char **)argv : wh_empty);
}

bool wh_set_env(wasi_config_t *cfg, size_t n, char **names, char **values) {
  return wasi_config_set_env(cfg, n, n ? (const char **)names : wh_empty,
                             n ? (const char **)values : wh_empty);
}

void wh_set_stdin(wasi_config_t *cfg, const uint8_t *p, size_t n) {
  wasm_byte_vec_t v;
  if (n == 0) wasm_byte_vec_new_empty(&v);
  else wasm_byte_vec_new(&v, n, (const wasm_byte_t *)p);
  wasi_config_set_stdin_bytes(cfg, &v);
}

// ---- guest output to a descriptor -------------------------------------------
//
// The caller's log file, opened once, instead of a path opened (and created)
// on every instantiation. data is the engine's own duplicate of the
// descriptor, closed with the WASI context.
static ptrdiff_t wh_fd_write(void *data, const unsigned char *buf, size_t n) {
  int fd = (int)(intptr_t)data;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, buf + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (done > 0) break;
      return -(ptrdiff_t)errno;
    }
    done += (size_t)w;
  }
  return (ptrdiff_t)done;
}

static void wh_fd_close(void *data) { close((int)(intptr_t)data); }

bool wh_set_output_fd(wasi_config_t *cfg, int which, int fd) {
  int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) return false;
  if (which == 1)
    wasi_config_set_stdout_custom(cfg, wh_fd_write, (void *)(intptr_t)d, wh_fd_close);
  else
    wasi_config_set_stderr_custom(cfg, wh_fd_write, (void *)(intptr_t)d, wh_fd_close);
  return true;
}
