;; noexport.wat: a component that exports no murmur:capsule/run.
(component
  (core module $m (func (export "go")))
  (core instance $i (instantiate $m))
  (func $go (canon lift (core func $i "go")))
  (export "go" (func $go)))
