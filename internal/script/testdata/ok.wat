;; ok.wat: a script capsule whose run returns at once.
(component
  (core module $m (func (export "run")))
  (core instance $i (instantiate $m))
  (func $run (canon lift (core func $i "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
