package wasmhost

import (
	"context"
	"os"
	"testing"
)

func TestSmoke(t *testing.T) {
	e, err := NewEngine(Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src, _ := os.ReadFile("testdata/basic.wat")
	c, err := e.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range c.Exports() {
		t.Log(it)
	}
	i, err := e.Instantiate(context.Background(), c, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := i.Call(context.Background(), "", "add", uint32(2), uint32(40))
	t.Log(v, err)
	_, err = i.Call(context.Background(), "murmur:capsule/run@0.1.0", "run")
	t.Log(err)
	_, err = i.Call(context.Background(), "", "trap")
	t.Logf("%#v", err)
	i.Close()
	i, _ = e.Instantiate(context.Background(), c, RunConfig{Limits: Limits{Deadline: 200e6}})
	_, err = i.Call(context.Background(), "", "spin")
	t.Logf("%#v", err)
	i.Close()
	c.Close()
}
