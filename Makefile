# Convenience targets; the README shows the plain commands they run.
.PHONY: build test demo install

build:
	go build -o bin/ ./cmd/...

test:
	go test -race -timeout 30m ./...

demo:
	scripts/demo.sh

install:
	scripts/install.sh $(PREFIX)
