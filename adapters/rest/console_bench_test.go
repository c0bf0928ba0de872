package rest

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// BenchmarkConsolePage50 is the server time of the console's 50-row
// pages, one request after another over loopback HTTP, the whole chain
// included: authentication, the permission check, the use case's reads,
// the rendering and the request's own audit record committed before the
// answer. page-bytes is the page's weight (uncompressed).
func BenchmarkConsolePage50(b *testing.B) {
	// The API's JSON of the same 50 records and sessions, for comparison.
	for _, page := range []string{"/console/audit", "/api/v2/audit?limit=50", "/console/sessions", "/api/v2/sessions?limit=50"} {
		b.Run(page, func(b *testing.B) {
			h := axStart(b, filepath.Join(b.TempDir(), "agentauth.db"))
			ctx := porttest.Context(b)
			for i := range 60 {
				s := domain.Session{ID: fmt.Sprintf("ses_%03d", i), Owner: "adm", Title: "a session with a title", Mode: domain.ModeAsk,
					State: domain.SessionActive, CreatedAt: time.Now().UTC()}
				if err := h.store.CreateSession(ctx, s); err != nil {
					b.Fatal(err)
				}
				if res := h.do(b, "adm", http.MethodGet, "/api/v2/me", ""); res.status != 200 { // an audit record each
					b.Fatalf("seed: %d", res.status)
				}
			}
			req, err := http.NewRequest(http.MethodGet, h.url+page, nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+axKey("adm"))
			var size int64
			for b.Loop() {
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatalf("GET %s: %d", page, res.StatusCode)
				}
				size = n
			}
			b.ReportMetric(float64(size), "page-bytes")
		})
	}
}
