# Convenience targets; the README shows the plain commands they run.
.PHONY: build test demo

build:
	go build -o bin/ ./cmd/...

test:
	go test -race ./...

demo:
	scripts/demo.sh
