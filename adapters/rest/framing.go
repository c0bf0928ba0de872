package rest

import (
	"bytes"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/agentauth/agentauth/domain"
)

var (
	headerContentLength    = []byte("Content-Length")
	headerTransferEncoding = []byte("Transfer-Encoding")
	codingChunked          = []byte("chunked")
)

// checkFraming refuses a request whose body framing is ambiguous, the
// ground of request smuggling (RFC 9112 §6.1, §6.3): Content-Length
// together with Transfer-Encoding, a Transfer-Encoding whose final coding
// is not chunked, or Content-Length values that differ. fasthttp reads such
// a body one way (chunked) where a proxy in front may read it the other, so
// the raw header lines are read here: fasthttp keeps only its own
// interpretation. The caller must close the connection, since where the
// next request starts is unknown.
func checkFraming(h *fasthttp.RequestHeader) error {
	var contentLength, lastCoding []byte
	var sawLength, sawEncoding bool
	raw := h.RawHeaders()
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		i := bytes.IndexByte(line, ':')
		// Most lines are neither header: their name's length says so
		// without comparing it.
		if i != len(headerContentLength) && i != len(headerTransferEncoding) {
			continue
		}
		key, value := line[:i], bytes.Trim(line[i+1:], " \t\r")
		switch {
		case bytes.EqualFold(key, headerContentLength):
			if sawLength && !bytes.Equal(value, contentLength) {
				return fmt.Errorf("two different Content-Length values: %w", domain.ErrInvalidInput)
			}
			sawLength, contentLength = true, value
		case bytes.EqualFold(key, headerTransferEncoding):
			sawEncoding = true
			lastCoding = value
			if i := bytes.LastIndexByte(value, ','); i >= 0 {
				lastCoding = bytes.Trim(value[i+1:], " \t")
			}
		}
	}
	switch {
	case sawEncoding && sawLength:
		return fmt.Errorf("Content-Length together with Transfer-Encoding: %w", domain.ErrInvalidInput)
	case sawEncoding && !bytes.EqualFold(lastCoding, codingChunked):
		return fmt.Errorf("Transfer-Encoding must end with chunked: %w", domain.ErrInvalidInput)
	}
	return nil
}
