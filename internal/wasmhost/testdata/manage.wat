;; manage.wat: a capsule calling murmur:artifact-manager/manage@0.1.0 (list,
;; pull) and murmur:message/send@0.1.0, returning each answer unchanged from
;; an export of the same type, so the host sees exactly what the guest got:
;;   list-back() -> list<artifact-summary>
;;   pull-back(name, version) -> result<artifact-summary, string>
;;   send-back(peer-url, message) -> result<task-result, string>
(component
  (import "murmur:artifact-manager/manage@0.1.0" (instance $am
    (type $rt (enum "wasm" "native"))
    (export "runtime-type" (type $runtime-type (eq $rt)))
    (type $as (record (field "name" string) (field "version" string) (field "runtime" $runtime-type)))
    (export "artifact-summary" (type $artifact-summary (eq $as)))
    (export "list" (func (result (list $artifact-summary))))
    (export "pull" (func (param "name" string) (param "version" string) (result (result $artifact-summary (error string)))))))
  (alias export $am "artifact-summary" (type $artifact-summary))
  (import "murmur:message/send@0.1.0" (instance $msg
    (type $m (record (field "message-id" string) (field "context-id" (option string)) (field "text" string)))
    (export "message" (type $message (eq $m)))
    (type $t (record (field "task-id" string) (field "context-id" string) (field "state" string)))
    (export "task-result" (type $task-result (eq $t)))
    (export "send" (func (param "peer-url" string) (param "message" $message) (result (result $task-result (error string)))))))
  (alias export $msg "message" (type $message))
  (alias export $msg "task-result" (type $task-result))

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

  (core func $list (canon lower (func $am "list") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core func $pull (canon lower (func $am "pull") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core func $send (canon lower (func $msg "send") (memory $memory) (realloc $realloc) string-encoding=utf8))

  (core module $Main
    (import "env" "bump" (global $bump (mut i32)))
    (import "host" "list" (func $list (param i32)))
    (import "host" "pull" (func $pull (param i32 i32 i32 i32 i32)))
    (import "host" "send" (func $send (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32)))
    (func (export "list-back") (result i32) (call $list (i32.const 1000)) (i32.const 1000))
    (func (export "pull-back") (param i32 i32 i32 i32) (result i32)
      (call $pull (local.get 0) (local.get 1) (local.get 2) (local.get 3) (i32.const 1000)) (i32.const 1000))
    (func (export "send-back") (param i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
      (call $send (local.get 0) (local.get 1) (local.get 2) (local.get 3) (local.get 4)
                  (local.get 5) (local.get 6) (local.get 7) (local.get 8) (i32.const 1000))
      (i32.const 1000))
    (func (export "post") (param i32) (global.set $bump (i32.const 8192))))
  (core instance $main (instantiate $Main
    (with "env" (instance (export "bump" (global $mem "bump"))))
    (with "host" (instance (export "list" (func $list)) (export "pull" (func $pull)) (export "send" (func $send))))))
  (func (export "list-back") (result (list $artifact-summary))
    (canon lift (core func $main "list-back") (memory $memory) string-encoding=utf8 (post-return (func $main "post"))))
  (func (export "pull-back") (param "name" string) (param "version" string) (result (result $artifact-summary (error string)))
    (canon lift (core func $main "pull-back") (memory $memory) (realloc $realloc) string-encoding=utf8 (post-return (func $main "post"))))
  (func (export "send-back") (param "peer-url" string) (param "message" $message) (result (result $task-result (error string)))
    (canon lift (core func $main "send-back") (memory $memory) (realloc $realloc) string-encoding=utf8 (post-return (func $main "post")))))
