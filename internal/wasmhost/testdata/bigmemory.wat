;; bigmemory.wat: a memory whose minimum (64 MiB) is over a small limit.
(component
  (core module $M (memory 1024) (func (export "run")))
  (core instance $m (instantiate $M))
  (func (export "run") (canon lift (core func $m "run"))))
