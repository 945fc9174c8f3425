package wasmhost

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestProbeSyncConn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1024))
		w.Write(make([]byte, 1024))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, lock := range []bool{true, true, true, true} {
		func() {
			if lock {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			c, err := dialSync(context.Background(), "http", u.Host, 0, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var wr, rd, tot []time.Duration
			buf := make([]byte, 4096)
			for i := 0; i < 2000; i++ {
				req, _ := http.NewRequest("GET", srv.URL+"/x", nil)
				if gap := time.Now().Add(200 * time.Microsecond); lock {
					for time.Now().Before(gap) {
					}
				}
				t0 := time.Now()
				req.Write(c.bw)
				c.bw.Flush()
				t1 := time.Now()
				resp, err := http.ReadResponse(c.br, req)
				if err != nil {
					t.Fatal(err)
				}
				t2 := time.Now()
				for {
					_, err := resp.Body.Read(buf)
					if err == io.EOF {
						break
					}
				}
				t3 := time.Now()
				wr = append(wr, t1.Sub(t0))
				rd = append(rd, t2.Sub(t1))
				tot = append(tot, t3.Sub(t0))
			}
			med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
			t.Logf("lock=%v write %v head %v total %v", lock, med(wr), med(rd), med(tot))
		}()
	}
}
