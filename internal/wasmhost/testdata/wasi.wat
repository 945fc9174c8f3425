;; wasi.wat: a guest that reports what WASI gives it.
;;   env() -> list<tuple<string, string>>       wasi:cli/environment get-environment
;;   args() -> list<string>                       wasi:cli/environment get-arguments
;;   say(out: string, err: string)                writes to stdout and stderr
;;   open(dir: u32, path: string, create: bool) -> u32
;;       open-at on the dir-th preopen: create+write when create, else read;
;;       0 = ok, 1 + wasi:filesystem error-code otherwise, 999 = no such preopen
;;   stdin-read(n: u64) -> list<u8>               reads up to n bytes of stdin
(component
  (import "wasi:io/error@0.2.6" (instance $ioerr (export "error" (type (sub resource)))))
  (alias export $ioerr "error" (type $error))
  (import "wasi:io/streams@0.2.6" (instance $streams
    (export "error" (type $e (eq $error)))
    (export "output-stream" (type $os (sub resource)))
    (export "input-stream" (type $is (sub resource)))
    (type $se (variant (case "last-operation-failed" (own $e)) (case "closed")))
    (export "stream-error" (type $stream-error (eq $se)))
    (export "[method]output-stream.blocking-write-and-flush"
      (func (param "self" (borrow $os)) (param "contents" (list u8)) (result (result (error $stream-error)))))
    (export "[method]input-stream.blocking-read"
      (func (param "self" (borrow $is)) (param "len" u64) (result (result (list u8) (error $stream-error)))))))
  (alias export $streams "output-stream" (type $output-stream))
  (alias export $streams "input-stream" (type $input-stream))
  (import "wasi:cli/environment@0.2.6" (instance $env
    (export "get-environment" (func (result (list (tuple string string)))))
    (export "get-arguments" (func (result (list string))))))
  (import "wasi:cli/stdin@0.2.6" (instance $stdin
    (export "input-stream" (type $i (eq $input-stream)))
    (export "get-stdin" (func (result (own $i))))))
  (import "wasi:cli/stdout@0.2.6" (instance $stdout
    (export "output-stream" (type $o (eq $output-stream)))
    (export "get-stdout" (func (result (own $o))))))
  (import "wasi:cli/stderr@0.2.6" (instance $stderr
    (export "output-stream" (type $o (eq $output-stream)))
    (export "get-stderr" (func (result (own $o))))))
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
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
      (global.set $bump (i32.add (local.get $p) (local.get 3)))
      (block $ok
        (loop $more
          (br_if $ok (i32.le_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536))))
          (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then unreachable))
          (br $more)))
      (local.get $p)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "cabi_realloc" (core func $realloc))

  (core func $getenv (canon lower (func $env "get-environment") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core func $getargs (canon lower (func $env "get-arguments") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core func $getstdin (canon lower (func $stdin "get-stdin")))
  (core func $getstdout (canon lower (func $stdout "get-stdout")))
  (core func $getstderr (canon lower (func $stderr "get-stderr")))
  (core func $write (canon lower (func $streams "[method]output-stream.blocking-write-and-flush") (memory $memory) (realloc $realloc)))
  (core func $read (canon lower (func $streams "[method]input-stream.blocking-read") (memory $memory) (realloc $realloc)))
  (core func $getdirs (canon lower (func $pre "get-directories") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core func $openat (canon lower (func $fs "[method]descriptor.open-at") (memory $memory) (realloc $realloc) string-encoding=utf8))

  (core module $Main
    (import "env" "memory" (memory 1))
    (import "env" "bump" (global $bump (mut i32)))
    (import "host" "getenv" (func $getenv (param i32)))
    (import "host" "getargs" (func $getargs (param i32)))
    (import "host" "getstdin" (func $getstdin (result i32)))
    (import "host" "getstdout" (func $getstdout (result i32)))
    (import "host" "getstderr" (func $getstderr (result i32)))
    (import "host" "write" (func $write (param i32 i32 i32 i32)))
    (import "host" "read" (func $read (param i32 i64 i32)))
    (import "host" "getdirs" (func $getdirs (param i32)))
    (import "host" "openat" (func $openat (param i32 i32 i32 i32 i32 i32 i32)))
    (func (export "env") (result i32) (call $getenv (i32.const 1000)) (i32.const 1000))
    (func (export "args") (result i32) (call $getargs (i32.const 1000)) (i32.const 1000))
    (func (export "say") (param $op i32) (param $ol i32) (param $ep i32) (param $el i32)
      (call $write (call $getstdout) (local.get $op) (local.get $ol) (i32.const 1012))
      (if (i32.load8_u (i32.const 1012)) (then unreachable))
      (call $write (call $getstderr) (local.get $ep) (local.get $el) (i32.const 1012))
      (if (i32.load8_u (i32.const 1012)) (then unreachable)))
    (func (export "stdin-read") (param $n i64) (result i32)
      (call $read (call $getstdin) (local.get $n) (i32.const 1020))
      ;; ok: list at 1024; error (closed at end of input): empty list
      (if (i32.load8_u (i32.const 1020))
        (then (i32.store (i32.const 1024) (i32.const 0)) (i32.store (i32.const 1028) (i32.const 0))))
      (i32.const 1024))
    (func (export "open") (param $dir i32) (param $p i32) (param $l i32) (param $create i32) (result i32)
      (local $fd i32)
      (call $getdirs (i32.const 1100))
      (if (i32.ge_u (local.get $dir) (i32.load (i32.const 1104))) (then (return (i32.const 999))))
      (local.set $fd (i32.load (i32.add (i32.load (i32.const 1100)) (i32.mul (local.get $dir) (i32.const 12)))))
      (call $openat (local.get $fd) (i32.const 0) (local.get $p) (local.get $l)
        (select (i32.const 1) (i32.const 0) (local.get $create))
        (select (i32.const 2) (i32.const 1) (local.get $create))
        (i32.const 1200))
      (if (result i32) (i32.eqz (i32.load8_u (i32.const 1200)))
        (then (i32.const 0))
        (else (i32.add (i32.const 1) (i32.load8_u (i32.const 1204))))))
    (func (export "post") (param i32) (global.set $bump (i32.const 8192))))
  (core instance $main (instantiate $Main
    (with "env" (instance (export "memory" (memory $memory)) (export "bump" (global $mem "bump"))))
    (with "host" (instance
      (export "getenv" (func $getenv)) (export "getargs" (func $getargs))
      (export "getstdin" (func $getstdin))
      (export "getstdout" (func $getstdout)) (export "getstderr" (func $getstderr))
      (export "write" (func $write)) (export "read" (func $read))
      (export "getdirs" (func $getdirs)) (export "openat" (func $openat))))))
  (func (export "env") (result (list (tuple string string)))
    (canon lift (core func $main "env") (memory $memory) string-encoding=utf8 (post-return (func $main "post"))))
  (func (export "args") (result (list string))
    (canon lift (core func $main "args") (memory $memory) string-encoding=utf8 (post-return (func $main "post"))))
  (func (export "say") (param "out" string) (param "err" string)
    (canon lift (core func $main "say") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (func (export "stdin-read") (param "n" u64) (result (list u8))
    (canon lift (core func $main "stdin-read") (memory $memory) (post-return (func $main "post"))))
  (func (export "open") (param "dir" u32) (param "path" string) (param "create" bool) (result u32)
    (canon lift (core func $main "open") (memory $memory) (realloc $realloc) string-encoding=utf8)))
