;; grow.wat: run asks for 1 GiB more memory; refused, it traps.
(component
  (core module $m
    (memory 1)
    (func (export "run")
      (if (i32.eq (memory.grow (i32.const 16384)) (i32.const -1))
        (then unreachable))))
  (core instance $i (instantiate $m))
  (func $run (canon lift (core func $i "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
