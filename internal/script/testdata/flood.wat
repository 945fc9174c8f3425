;; flood.wat: run writes COUNT blocks of 4 KiB (the most one blocking write takes) of "x" to stdout, then a
;; last line, then returns. (The test replaces COUNT.)
(component
  (import "wasi:io/error@0.2.6" (instance $ioerr (export "error" (type (sub resource)))))
  (alias export $ioerr "error" (type $error))
  (import "wasi:io/streams@0.2.6" (instance $streams
    (export "error" (type $e (eq $error)))
    (export "output-stream" (type $os (sub resource)))
    (type $se (variant (case "last-operation-failed" (own $e)) (case "closed")))
    (export "stream-error" (type $stream-error (eq $se)))
    (export "[method]output-stream.blocking-write-and-flush"
      (func (param "self" (borrow $os)) (param "contents" (list u8)) (result (result (error $stream-error)))))))
  (alias export $streams "output-stream" (type $output-stream))
  (import "wasi:cli/stdout@0.2.6" (instance $stdout
    (export "output-stream" (type $o (eq $output-stream)))
    (export "get-stdout" (func (result (own $o))))))
  (core module $Mem
    (memory (export "memory") 3)
    (data (i32.const 16) "the end\0a")
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (unreachable)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "cabi_realloc" (core func $realloc))
  (core func $getstdout (canon lower (func $stdout "get-stdout")))
  (core func $write (canon lower (func $streams "[method]output-stream.blocking-write-and-flush") (memory $memory) (realloc $realloc)))
  (core module $Main
    (import "env" "memory" (memory 1))
    (import "host" "getstdout" (func $getstdout (result i32)))
    (import "host" "write" (func $write (param i32 i32 i32 i32)))
    (func (export "run")
      (local $out i32) (local $n i32)
      (memory.fill (i32.const 65536) (i32.const 120) (i32.const 65536))
      (local.set $out (call $getstdout))
      (local.set $n (i32.const COUNT))
      (block $done
        (loop $more
          (br_if $done (i32.eqz (local.get $n)))
          (call $write (local.get $out) (i32.const 65536) (i32.const 4096) (i32.const 0))
          (if (i32.load8_u (i32.const 0)) (then unreachable))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $more)))
      (call $write (local.get $out) (i32.const 16) (i32.const 8) (i32.const 0))))
  (core instance $main (instantiate $Main
    (with "env" (instance (export "memory" (memory $memory))))
    (with "host" (instance (export "getstdout" (func $getstdout)) (export "write" (func $write))))))
  (func $run (canon lift (core func $main "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
