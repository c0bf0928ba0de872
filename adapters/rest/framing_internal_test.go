package rest

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkCheckFraming measures the smuggling check every request pays:
// one pass over the raw header lines, no allocation.
func BenchmarkCheckFraming(b *testing.B) {
	for _, tt := range []struct{ name, extra string }{
		{"GET", ""},
		{"POST with Content-Length", "Content-Type: application/json\r\nContent-Length: 42\r\n"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			raw := "GET /api/v2/sessions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: loadgen/1\r\nAccept: application/json\r\n" +
				"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl\r\n" + tt.extra + "\r\n"
			var h fasthttp.RequestHeader
			if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := checkFraming(&h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
