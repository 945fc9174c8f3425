package load

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Every bucket's lower edge maps back to it, edges increase, and a value
// lands in the bucket whose range holds it within 1 %.
func TestHistogramBuckets(t *testing.T) {
	prev := time.Duration(-1)
	for i := 0; i < histBuckets; i++ {
		lb := lowerBound(i)
		if lb <= prev {
			t.Fatalf("bucket %d: lower bound %d not above %d", i, lb, prev)
		}
		if got := bucketOf(lb); got != i {
			t.Fatalf("bucketOf(lowerBound(%d) = %d) = %d", i, lb, got)
		}
		prev = lb
	}
	for _, d := range []time.Duration{0, 1, 127, 128, 129, 255, 256, 1000, 999_999, time.Millisecond, 3270 * time.Microsecond, time.Hour} {
		lb := lowerBound(bucketOf(d))
		if lb > d || float64(d-lb) > 0.01*float64(d) {
			t.Errorf("%v: bucket lower bound %v", d, lb)
		}
	}
}

// Quantiles agree with sorting the samples, to the bucket width.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h, a, b histogram
	var all []time.Duration
	for i := range 100_000 {
		d := time.Duration(rng.ExpFloat64() * float64(400*time.Microsecond))
		all = append(all, d)
		if i%2 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	h.add(&a)
	h.add(&b)
	slices.Sort(all)
	if h.n != uint64(len(all)) || h.max != all[len(all)-1] {
		t.Fatalf("n %d max %v, want %d %v", h.n, h.max, len(all), all[len(all)-1])
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := all[min(int(q*float64(len(all))+0.999999)-1, len(all)-1)]
		got := h.quantile(q)
		if got > want || float64(want-got) > 0.01*float64(want) {
			t.Errorf("q %g: %v, want %v (within 1 %%)", q, got, want)
		}
	}
	var empty histogram
	if empty.quantile(0.99) != 0 || empty.pcts() != "-" {
		t.Error("empty histogram")
	}
}

func TestField(t *testing.T) {
	for _, c := range []struct{ body, key, want string }{
		{`{"credential": "mrc1.abc.def"}`, "credential", "mrc1.abc.def"},
		{`{"approval":"x","name":"local/worker-a"}`, "name", "local/worker-a"},
		{`{"approval": "a\"b"}`, "approval", `a"b`},
		{`{"approval": 1}`, "approval", ""},
		{`{}`, "approval", ""},
		{`not json`, "approval", ""},
	} {
		if got := field([]byte(c.body), c.key); got != c.want {
			t.Errorf("field(%s, %s) = %q, want %q", c.body, c.key, got, c.want)
		}
	}
}
