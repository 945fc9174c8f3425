;; basic.wat: exports murmur:capsule/run@0.1.0 (does nothing) and a few
;; top-level functions used by the value and ending tests.
(component
  (core module $m
    (func (export "run"))
    (func (export "add") (param i32 i32) (result i32)
      local.get 0 local.get 1 i32.add)
    (func (export "trap") unreachable)
    (func (export "spin") (loop $l (br $l))))
  (core instance $i (instantiate $m))
  (func $run (canon lift (core func $i "run")))
  (func $add (param "a" u32) (param "b" u32) (result u32) (canon lift (core func $i "add")))
  (func $trap (canon lift (core func $i "trap")))
  (func $spin (canon lift (core func $i "spin")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule))
  (export "add" (func $add))
  (export "trap" (func $trap))
  (export "spin" (func $spin)))
