package door_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// BenchmarkSendMessageCompleted: SendMessage → TASK_STATE_COMPLETED for an
// immediate runner, through a2a-go's client over loopback; reports p50/p99.
func BenchmarkSendMessageCompleted(b *testing.B) {
	f := startB(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: userMsg("ok")})
		if err != nil {
			b.Fatal(err)
		}
		if res.(*a2a.Task).Status.State != a2a.TaskStateCompleted {
			b.Fatal(res.(*a2a.Task).Status.State)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
