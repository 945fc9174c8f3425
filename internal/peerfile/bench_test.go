package peerfile

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

const benchSize = 100 << 20

// BenchmarkFetch100MiB is one fetch-peer-file of a 100 MiB file between two
// local capsules' sides: the sharer's route (hash, then serve, from one
// descriptor) over loopback, the fetcher hashing and landing it in peer-in/.
func BenchmarkFetch100MiB(b *testing.B) {
	s := newSharer(b, benchSize)
	f, _ := os.Create(filepath.Join(s.workdir, "share", "big"))
	io.CopyN(f, zeroReader{}, benchSize)
	f.Close()
	sh, ref := s.pl.Share("big", "")
	if ref != nil {
		b.Fatal(ref)
	}
	fe := newFetcher(b, "127.0.0.1")
	fe.MaxBody = benchSize
	b.SetBytes(benchSize)
	for b.Loop() {
		if _, _, _, err := fe.Fetch(context.Background(), sh.Handle); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCurl100MiB is the same file fetched by curl from net/http's file
// server on loopback, written to a file: the yardstick of the one above.
func BenchmarkCurl100MiB(b *testing.B) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		b.Skip("no curl")
	}
	dir := b.TempDir()
	f, _ := os.Create(filepath.Join(dir, "big"))
	io.CopyN(f, zeroReader{}, benchSize)
	f.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go srv.Serve(ln)
	defer srv.Close()
	out := filepath.Join(b.TempDir(), "out")
	b.SetBytes(benchSize)
	for b.Loop() {
		if err := exec.Command(curl, "-sSf", "-o", out, "http://"+ln.Addr().String()+"/big").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i)
	}
	return len(p), nil
}
