;; http_capsule.wat: a script capsule whose run makes one outgoing
;; wasi:http@0.2.9 request to https://blocked.example.com/secret?x=1 (the
;; import shapes are those of internal/wasmhost/testdata/http.wat). run returns
;; only when the runtime answers err(HTTP-request-denied); any other answer
;; traps, so the ending says whether the request was denied.
(component
  (import "wasi:http/types@0.2.9" (instance $types
    (export "fields" (type $fields (sub resource)))
    (export "outgoing-request" (type $req (sub resource)))
    (export "request-options" (type $opts (sub resource)))
    (export "future-incoming-response" (type $fut (sub resource)))
    (type $ec (variant (case "DNS-timeout") (case "HTTP-request-denied") (case "internal-error" (option string))))
    (export "error-code" (type $error-code (eq $ec)))
    (type $sch (variant (case "HTTP") (case "HTTPS") (case "other" string)))
    (export "scheme" (type $scheme (eq $sch)))
    (export "[constructor]fields" (func (result (own $fields))))
    (export "[constructor]outgoing-request" (func (param "headers" (own $fields)) (result (own $req))))
    (export "[method]outgoing-request.set-scheme" (func (param "self" (borrow $req)) (param "scheme" (option $scheme)) (result (result))))
    (export "[method]outgoing-request.set-authority" (func (param "self" (borrow $req)) (param "authority" (option string)) (result (result))))
    (export "[method]outgoing-request.set-path-with-query" (func (param "self" (borrow $req)) (param "path-with-query" (option string)) (result (result))))))
  (alias export $types "outgoing-request" (type $outgoing-request))
  (alias export $types "request-options" (type $request-options))
  (alias export $types "future-incoming-response" (type $future-incoming-response))
  (alias export $types "error-code" (type $error-code))
  (import "wasi:http/outgoing-handler@0.2.9" (instance $handler
    (export "outgoing-request" (type $r (eq $outgoing-request)))
    (export "request-options" (type $o (eq $request-options)))
    (export "future-incoming-response" (type $f (eq $future-incoming-response)))
    (export "error-code" (type $e (eq $error-code)))
    (export "handle" (func (param "request" (own $r)) (param "options" (option (own $o)))
      (result (result (own $f) (error $e)))))))

  (core module $Mem
    (memory (export "memory") 1)
    (global $bump (mut i32) (i32.const 8192))
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
      (global.set $bump (i32.add (local.get $p) (local.get 3)))
      (local.get $p)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "cabi_realloc" (core func $realloc))

  (core func $fields (canon lower (func $types "[constructor]fields")))
  (core func $request (canon lower (func $types "[constructor]outgoing-request")))
  (core func $scheme (canon lower (func $types "[method]outgoing-request.set-scheme") (memory $memory) string-encoding=utf8))
  (core func $authority (canon lower (func $types "[method]outgoing-request.set-authority") (memory $memory) string-encoding=utf8))
  (core func $path (canon lower (func $types "[method]outgoing-request.set-path-with-query") (memory $memory) string-encoding=utf8))
  (core func $handle (canon lower (func $handler "handle") (memory $memory) (realloc $realloc) string-encoding=utf8))

  (core module $Main
    (import "env" "memory" (memory 1))
    (import "host" "fields" (func $fields (result i32)))
    (import "host" "request" (func $request (param i32) (result i32)))
    (import "host" "scheme" (func $scheme (param i32 i32 i32 i32 i32) (result i32)))
    (import "host" "authority" (func $authority (param i32 i32 i32 i32) (result i32)))
    (import "host" "path" (func $path (param i32 i32 i32 i32) (result i32)))
    (import "host" "handle" (func $handle (param i32 i32 i32 i32)))
    (data (i32.const 100) "blocked.example.com/secret?x=1")
    (func $attempt (export "attempt") (result i32)
      (local $req i32)
      (local.set $req (call $request (call $fields)))
      ;; set-scheme(some(HTTPS)): option disc 1, variant disc 1, no payload
      (if (call $scheme (local.get $req) (i32.const 1) (i32.const 1) (i32.const 0) (i32.const 0)) (then (return (i32.const 3))))
      (if (call $authority (local.get $req) (i32.const 1) (i32.const 100) (i32.const 19)) (then (return (i32.const 3))))
      (if (call $path (local.get $req) (i32.const 1) (i32.const 119) (i32.const 11)) (then (return (i32.const 3))))
      (call $handle (local.get $req) (i32.const 0) (i32.const 0) (i32.const 2000))
      (if (i32.eqz (i32.load8_u (i32.const 2000))) (then (return (i32.const 0))))
      (if (i32.eq (i32.load8_u (i32.const 2004)) (i32.const 1)) (then (return (i32.const 1))))
      (i32.const 2))
    (func (export "run")
      (if (i32.ne (call $attempt) (i32.const 1)) (then unreachable))))
  (core instance $main (instantiate $Main
    (with "env" (instance (export "memory" (memory $memory))))
    (with "host" (instance
      (export "fields" (func $fields)) (export "request" (func $request))
      (export "scheme" (func $scheme)) (export "authority" (func $authority))
      (export "path" (func $path)) (export "handle" (func $handle))))))
  (func $run (canon lift (core func $main "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
