;; hold.wat: run creates "hold.bin" in its work folder, then opens it again and
;; again without ever dropping a descriptor, up to 30,000 times or until an
;; open-at fails. Holding LIMIT or more at once traps (the test replaces LIMIT);
;; otherwise it returns: the host's descriptor bound held and the guest went on.
(component
  (import "wasi:filesystem/types@0.2.6" (instance $fs
    (export "descriptor" (type $d (sub resource)))
    (type $ec (enum "access" "would-block" "already" "bad-descriptor" "busy" "deadlock" "quota"
      "exist" "file-too-large" "illegal-byte-sequence" "in-progress" "interrupted" "invalid" "io"
      "is-directory" "loop" "too-many-links" "message-size" "name-too-long" "no-device" "no-entry"
      "no-lock" "insufficient-memory" "insufficient-space" "not-directory" "not-empty"
      "not-recoverable" "unsupported" "no-tty" "no-such-device" "overflow" "not-permitted" "pipe"
      "read-only" "invalid-seek" "text-file-busy" "cross-device"))
    (export "error-code" (type $error-code (eq $ec)))
    (type $pf (flags "symlink-follow"))
    (export "path-flags" (type $path-flags (eq $pf)))
    (type $of (flags "create" "directory" "exclusive" "truncate"))
    (export "open-flags" (type $open-flags (eq $of)))
    (type $df (flags "read" "write" "file-integrity-sync" "data-integrity-sync" "requested-write-sync" "mutate-directory"))
    (export "descriptor-flags" (type $descriptor-flags (eq $df)))
    (export "[method]descriptor.open-at"
      (func (param "self" (borrow $d)) (param "path-flags" $path-flags) (param "path" string)
            (param "open-flags" $open-flags) (param "flags" $descriptor-flags)
            (result (result (own $d) (error $error-code)))))))
  (alias export $fs "descriptor" (type $descriptor))
  (import "wasi:filesystem/preopens@0.2.6" (instance $pre
    (export "descriptor" (type $dd (eq $descriptor)))
    (export "get-directories" (func (result (list (tuple (own $dd) string)))))))
  (core module $Mem
    (memory (export "memory") 1)
    (global $bump (export "bump") (mut i32) (i32.const 8192))
    (data (i32.const 32) "hold.bin")
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
      (global.set $bump (i32.add (local.get $p) (local.get 3)))
      (local.get $p)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "cabi_realloc" (core func $realloc))
  (core func $getdirs (canon lower (func $pre "get-directories") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core func $openat (canon lower (func $fs "[method]descriptor.open-at") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core module $Main
    (import "env" "memory" (memory 1))
    (import "host" "getdirs" (func $getdirs (param i32)))
    (import "host" "openat" (func $openat (param i32 i32 i32 i32 i32 i32 i32)))
    (func (export "run")
      (local $dir i32) (local $held i32)
      (call $getdirs (i32.const 1100))
      ;; the first preopen is the work folder as "/"
      (local.set $dir (i32.load (i32.load (i32.const 1100))))
      ;; create hold.bin (create; read|write)
      (call $openat (local.get $dir) (i32.const 0) (i32.const 32) (i32.const 8)
        (i32.const 1) (i32.const 3) (i32.const 1200))
      (if (i32.load8_u (i32.const 1200)) (then unreachable))
      (local.set $held (i32.const 1))
      (block $full
        (loop $more
          (call $openat (local.get $dir) (i32.const 0) (i32.const 32) (i32.const 8)
            (i32.const 0) (i32.const 1) (i32.const 1200))
          (br_if $full (i32.load8_u (i32.const 1200)))
          (local.set $held (i32.add (local.get $held) (i32.const 1)))
          (if (i32.ge_u (local.get $held) (i32.const LIMIT)) (then unreachable))
          (br_if $more (i32.lt_u (local.get $held) (i32.const 30000)))))))
  (core instance $main (instantiate $Main
    (with "env" (instance (export "memory" (memory $memory)) (export "bump" (global $mem "bump"))))
    (with "host" (instance (export "getdirs" (func $getdirs)) (export "openat" (func $openat))))))
  (func $run (canon lift (core func $main "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
