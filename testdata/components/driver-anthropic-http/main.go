//go:build wasip1

// Command driver-anthropic-http is a Go-kit driver component (contracts §14): each
// call is one turn. It maps the normalized request to an Anthropic Messages request,
// POSTs it with streaming to $MURMUR_INFERENCE_ENDPOINT/v1/messages through the
// kit's net/http-free wasi:http client (guest/httpcore) with x-api-key
// $MURMUR_INFERENCE_API_KEY (a placeholder the host replaces with the real key on
// the gateway request only), relays text deltas as murmur:text/chunks, and answers
// the normalized response. Its JSON is read and written by hand (json.go): every
// turn is a fresh instance, and this keeps it small and quick to start.
package main

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/guest"
	"github.com/murmur-go/murmur/guest/httpcore"
)

func init() { guest.Tool(turn) }

func turn(in guest.ToolInput) guest.ToolResult {
	if in.Data == nil {
		return failed("no request")
	}
	req, err := parseRequest([]byte(*in.Data))
	if err != nil {
		return failed("the request is not JSON: " + err.Error())
	}
	out, err := call(req)
	if err != nil {
		return failed(err.Error())
	}
	return guest.ToolResult{Status: guest.StatusPassed, Data: guest.Some(string(out.marshal()))}
}

func failed(msg string) guest.ToolResult {
	return guest.ToolResult{Status: guest.StatusFailed, Summary: guest.Some(msg)}
}

func call(req request) (*response, error) {
	resp, err := httpcore.Do("POST", strings.TrimSuffix(os.Getenv("MURMUR_INFERENCE_ENDPOINT"), "/")+"/v1/messages", [][2]string{
		{"content-type", "application/json"},
		{"accept", "text/event-stream"},
		{"anthropic-version", "2023-06-01"},
		{"x-api-key", os.Getenv("MURMUR_INFERENCE_API_KEY")},
	}, wire(req))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.Status != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, errors.New("provider answered " + strconv.Itoa(resp.Status) + ": " + string(b))
	}
	return stream(resp.Body, guest.EmitChunk)
}
