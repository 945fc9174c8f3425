# Convenience targets; the README shows the plain commands they run.
.PHONY: build test demo

build:
	go build -o bin/ ./cmd/...

test:
	go test -race ./...

demo: build
	./bin/mur build examples/hello-agent -o /tmp/hello-agent-0.1.0.mur.zip
	./bin/mur publish /tmp/hello-agent-0.1.0.mur.zip
	./bin/mur list -g
