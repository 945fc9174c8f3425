package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// otlpExporter posts spans as an OTLP/HTTP protobuf
// ExportTraceServiceRequest to one URL, once, without retries.
//
// It builds the message itself rather than using the OTel project's
// exporter: that exporter links grpc, the generated OTLP types, the protobuf
// runtime and a gRPC gateway, whose package initialisation every mur process
// paid for at start, endpoint or not (issue 15; docs/benchmarks.md "Process
// start"). The message is small and fixed (opentelemetry-proto's trace/v1 and
// common/v1 field numbers). The wire primitives (tags, varints, fixed-width
// and length-delimited fields) are protowire's, the protobuf module's wire
// layer alone, which links none of the runtime (its package initialisation,
// three packages, measured 0.03-0.05 ms). The tests decode what is sent with
// the generated OTLP types, so a wrong field number fails them.
type otlpExporter struct {
	url     string
	headers http.Header
	client  *http.Client
}

func newOTLPExporter(t exportTarget) *otlpExporter {
	// The proxy rule is the one the OTel exporter used (the environment's,
	// which never proxies a loopback collector).
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConns: 1, IdleConnTimeout: 30 * time.Second}
	return &otlpExporter{url: t.url, headers: t.headers, client: &http.Client{Transport: tr, Timeout: t.timeout}}
}

func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body := encodeExportRequest(spans)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The response body (an ExportTraceServiceResponse, possibly naming
	// rejected spans) is read only so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("collector answered %s", resp.Status)
	}
	return nil
}

func (e *otlpExporter) Shutdown(ctx context.Context) error {
	e.client.CloseIdleConnections()
	return ctx.Err()
}

// Field numbers of opentelemetry-proto (collector/trace/v1, trace/v1,
// resource/v1, common/v1).
const (
	fReqResourceSpans = 1

	fRSResource   = 1
	fRSScopeSpans = 2
	fRSSchemaURL  = 3

	fResAttributes = 1

	fSSScope = 1
	fSSSpans = 2

	fScopeName    = 1
	fScopeVersion = 2

	fSpanTraceID      = 1
	fSpanSpanID       = 2
	fSpanTraceState   = 3
	fSpanParentSpanID = 4
	fSpanName         = 5
	fSpanKind         = 6
	fSpanStart        = 7
	fSpanEnd          = 8
	fSpanAttributes   = 9
	fSpanDroppedAttrs = 10
	fSpanEvents       = 11
	fSpanLinks        = 13
	fSpanStatus       = 15
	fSpanFlags        = 16

	fEventTime  = 1
	fEventName  = 2
	fEventAttrs = 3

	fLinkTraceID    = 1
	fLinkSpanID     = 2
	fLinkTraceState = 3
	fLinkAttrs      = 4
	fLinkFlags      = 6

	fStatusMessage = 2
	fStatusCode    = 3

	fKVKey   = 1
	fKVValue = 2

	fAnyString = 1
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4
	fAnyArray  = 5

	fArrayValues = 1

	// Span flags: the low byte is the W3C trace flags; bit 8 says the
	// parent's remoteness is known, bit 9 that it is remote.
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// encodeExportRequest groups spans by resource and scope, as the message
// nests them.
func encodeExportRequest(spans []sdktrace.ReadOnlySpan) []byte {
	var out pbuf
	type scopeKey struct{ name, version string }
	i := 0
	for i < len(spans) {
		res := spans[i].Resource()
		j := i
		for j < len(spans) && spans[j].Resource() == res {
			j++
		}
		out.message(fReqResourceSpans, func(rs *pbuf) {
			rs.message(fRSResource, func(r *pbuf) {
				if res != nil {
					for _, kv := range res.Attributes() {
						r.message(fResAttributes, func(b *pbuf) { b.keyValue(kv) })
					}
				}
			})
			k := i
			for k < j {
				sc := spans[k].InstrumentationScope()
				key := scopeKey{sc.Name, sc.Version}
				l := k
				for l < j {
					o := spans[l].InstrumentationScope()
					if (scopeKey{o.Name, o.Version}) != key {
						break
					}
					l++
				}
				rs.message(fRSScopeSpans, func(ss *pbuf) {
					ss.message(fSSScope, func(s *pbuf) {
						s.str(fScopeName, key.name)
						s.str(fScopeVersion, key.version)
					})
					for _, sp := range spans[k:l] {
						ss.message(fSSSpans, func(b *pbuf) { b.span(sp) })
					}
				})
				k = l
			}
			if res != nil {
				rs.str(fRSSchemaURL, res.SchemaURL())
			}
		})
		i = j
	}
	return out.b
}

func (p *pbuf) span(sp sdktrace.ReadOnlySpan) {
	sc := sp.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p.bytes(fSpanTraceID, tid[:])
	p.bytes(fSpanSpanID, sid[:])
	p.str(fSpanTraceState, sc.TraceState().String())
	if par := sp.Parent(); par.SpanID().IsValid() {
		psid := par.SpanID()
		p.bytes(fSpanParentSpanID, psid[:])
	}
	p.str(fSpanName, sp.Name())
	p.varint(fSpanKind, uint64(sp.SpanKind()))
	p.fixed64(fSpanStart, unixNano(sp.StartTime()))
	p.fixed64(fSpanEnd, unixNano(sp.EndTime()))
	for _, kv := range sp.Attributes() {
		p.message(fSpanAttributes, func(b *pbuf) { b.keyValue(kv) })
	}
	p.varint(fSpanDroppedAttrs, uint64(sp.DroppedAttributes()))
	for _, ev := range sp.Events() {
		p.message(fSpanEvents, func(b *pbuf) {
			b.fixed64(fEventTime, unixNano(ev.Time))
			b.str(fEventName, ev.Name)
			for _, kv := range ev.Attributes {
				b.message(fEventAttrs, func(c *pbuf) { c.keyValue(kv) })
			}
		})
	}
	for _, ln := range sp.Links() {
		p.message(fSpanLinks, func(b *pbuf) {
			lt, ls := ln.SpanContext.TraceID(), ln.SpanContext.SpanID()
			b.bytes(fLinkTraceID, lt[:])
			b.bytes(fLinkSpanID, ls[:])
			b.str(fLinkTraceState, ln.SpanContext.TraceState().String())
			for _, kv := range ln.Attributes {
				b.message(fLinkAttrs, func(c *pbuf) { c.keyValue(kv) })
			}
			b.fixed32(fLinkFlags, spanFlags(ln.SpanContext.TraceFlags(), ln.SpanContext.IsRemote()))
		})
	}
	st := sp.Status()
	p.message(fSpanStatus, func(b *pbuf) {
		b.str(fStatusMessage, st.Description)
		var code uint64 // UNSET
		switch st.Code {
		case codes.Ok:
			code = 1
		case codes.Error:
			code = 2
		}
		b.varint(fStatusCode, code)
	})
	p.fixed32(fSpanFlags, spanFlags(sc.TraceFlags(), sp.Parent().IsRemote()))
}

func spanFlags(tf trace.TraceFlags, remote bool) uint32 {
	f := uint32(spanFlagsHasIsRemote)
	if tf.IsSampled() {
		f |= 1
	}
	if remote {
		f |= spanFlagsIsRemote
	}
	return f
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func (p *pbuf) keyValue(kv attribute.KeyValue) {
	p.str(fKVKey, string(kv.Key))
	p.message(fKVValue, func(b *pbuf) { b.anyValue(kv.Value) })
}

func (p *pbuf) anyValue(v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		p.boolean(fAnyBool, v.AsBool())
	case attribute.INT64:
		p.tag(fAnyInt, protowire.VarintType)
		p.b = protowire.AppendVarint(p.b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		p.tag(fAnyDouble, protowire.Fixed64Type)
		p.b = protowire.AppendFixed64(p.b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		p.tag(fAnyString, protowire.BytesType)
		p.b = protowire.AppendString(p.b, v.AsString())
	case attribute.BOOLSLICE:
		p.array(func(a *pbuf) {
			for _, x := range v.AsBoolSlice() {
				a.message(fArrayValues, func(b *pbuf) { b.anyValue(attribute.BoolValue(x)) })
			}
		})
	case attribute.INT64SLICE:
		p.array(func(a *pbuf) {
			for _, x := range v.AsInt64Slice() {
				a.message(fArrayValues, func(b *pbuf) { b.anyValue(attribute.Int64Value(x)) })
			}
		})
	case attribute.FLOAT64SLICE:
		p.array(func(a *pbuf) {
			for _, x := range v.AsFloat64Slice() {
				a.message(fArrayValues, func(b *pbuf) { b.anyValue(attribute.Float64Value(x)) })
			}
		})
	case attribute.STRINGSLICE:
		p.array(func(a *pbuf) {
			for _, x := range v.AsStringSlice() {
				a.message(fArrayValues, func(b *pbuf) { b.anyValue(attribute.StringValue(x)) })
			}
		})
	default:
		// An attribute type this encoder does not know is sent as its
		// string form rather than dropped.
		p.tag(fAnyString, protowire.BytesType)
		p.b = protowire.AppendString(p.b, v.String())
	}
}

func (p *pbuf) array(fill func(*pbuf)) { p.message(fAnyArray, fill) }

// pbuf appends protobuf wire format. Zero scalars are omitted, as proto3
// does; a oneof member (AnyValue) is written even when zero.
type pbuf struct{ b []byte }

func (p *pbuf) tag(field protowire.Number, t protowire.Type) {
	p.b = protowire.AppendTag(p.b, field, t)
}

func (p *pbuf) varint(field protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	p.tag(field, protowire.VarintType)
	p.b = protowire.AppendVarint(p.b, v)
}

func (p *pbuf) boolean(field protowire.Number, v bool) {
	p.tag(field, protowire.VarintType)
	p.b = protowire.AppendVarint(p.b, protowire.EncodeBool(v))
}

func (p *pbuf) fixed64(field protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	p.tag(field, protowire.Fixed64Type)
	p.b = protowire.AppendFixed64(p.b, v)
}

func (p *pbuf) fixed32(field protowire.Number, v uint32) {
	if v == 0 {
		return
	}
	p.tag(field, protowire.Fixed32Type)
	p.b = protowire.AppendFixed32(p.b, v)
}

func (p *pbuf) str(field protowire.Number, s string) {
	if s == "" {
		return
	}
	p.tag(field, protowire.BytesType)
	p.b = protowire.AppendString(p.b, s)
}

func (p *pbuf) bytes(field protowire.Number, b []byte) {
	if len(b) == 0 {
		return
	}
	p.tag(field, protowire.BytesType)
	p.b = protowire.AppendBytes(p.b, b)
}

// message writes a length-delimited sub-message built by fill.
func (p *pbuf) message(field protowire.Number, fill func(*pbuf)) {
	var sub pbuf
	fill(&sub)
	p.tag(field, protowire.BytesType)
	p.b = protowire.AppendBytes(p.b, sub.b)
}
