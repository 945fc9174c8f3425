;; spin.wat: run loops in its own code forever (stopped at the deadline).
(component
  (core module $m (func (export "run") (loop $l (br $l))))
  (core instance $i (instantiate $m))
  (func $run (canon lift (core func $i "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
