# Convenience targets; the README shows the plain commands they run.
.PHONY: build test demo

build:
	go build -o bin/ ./cmd/...

test:
	go test -race ./...

demo: build
	./bin/mur build examples/echo-tool -o /tmp/echo-tool-0.1.0.mur.zip
	./bin/mur publish /tmp/echo-tool-0.1.0.mur.zip
	cd examples/hello-script && ../../bin/mur run --task "hello, murmur" --workdir /tmp/hello-script-run && ../../bin/mur trace show
	cat /tmp/hello-script-run/out/result.txt
