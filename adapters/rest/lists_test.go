package rest_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
)

type sessionPage struct {
	Sessions   []sessionOut `json:"sessions"`
	NextCursor *string      `json:"next_cursor"`
}

// TestSessionListStaysBoundedAsTheTableGrows is the soak of issue 24 in
// small: as the sessions an ADMIN may see grow from 1,000 to 50,000, the
// default answer of GET /api/v2/sessions keeps the same number of
// sessions and the same number of bytes, the newest first, with a cursor
// to the next page; ?limit= is clamped to app.MaxPageSize.
func TestSessionListStaysBoundedAsTheTableGrows(t *testing.T) {
	if testing.Short() {
		t.Skip("50,000 sessions")
	}
	h := start(t, options{})
	get := func(query string) (sessionPage, int) {
		t.Helper()
		r := h.do(t, "GET", "/api/v2/sessions"+query, bearer(keyAdmin), "")
		if r.status != 200 {
			t.Fatalf("GET /api/v2/sessions%s = %d %s", query, r.status, r.body)
		}
		var p sessionPage
		r.json(t, &p)
		return p, len(r.body)
	}
	sizes := map[int]int{}
	have := 0
	for _, total := range []int{1_000, 10_000, 50_000} {
		rest.BulkSessions(t, h.dbPath, "bulk", have, total)
		have = total
		page, size := get("")
		sizes[total] = size
		if len(page.Sessions) != app.DefaultPageSize || page.NextCursor == nil {
			t.Fatalf("%d stored: %d sessions, next %v; want %d and a next cursor", total, len(page.Sessions), page.NextCursor, app.DefaultPageSize)
		}
		if got, want := page.Sessions[0].ID, fmt.Sprintf("sess_%08d", total-1); got != want {
			t.Errorf("%d stored: first session %s, want the newest %s", total, got, want)
		}
		for _, q := range []string{"?limit=500", "?limit=100000"} {
			if p, _ := get(q); len(p.Sessions) != app.MaxPageSize {
				t.Errorf("%d stored, %s: %d sessions, want %d", total, q, len(p.Sessions), app.MaxPageSize)
			}
		}
	}
	if sizes[1_000] != sizes[10_000] || sizes[1_000] != sizes[50_000] {
		t.Errorf("answer bytes by sessions stored = %v, want one size", sizes)
	}
	t.Logf("default answer at 1k/10k/50k sessions: %v bytes", sizes)

	// Three pages follow each other, newest first, none repeated, while
	// newer sessions are added between them.
	var ids []string
	query := "?limit=200"
	for range 3 {
		page, _ := get(query)
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		rest.BulkSessions(t, h.dbPath, "bulk", have, have+10)
		have += 10
		query = "?limit=200&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	for i, id := range ids {
		if want := fmt.Sprintf("sess_%08d", 50_000-1-i); id != want {
			t.Fatalf("session %d of the walk is %s, want %s", i, id, want)
		}
	}
}

// BenchmarkListSessionsStored: GET /api/v2/sessions (the default page, an ADMIN
// seeing every session) with 1,000 and 50,000 sessions stored.
func BenchmarkListSessionsStored(b *testing.B) {
	for _, rows := range []int{1_000, 50_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			path := b.TempDir() + "/bench.db"
			client, _, _ := benchServerAt(b, path)
			rest.BulkSessions(b, path, "bulk", 0, rows)
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.SetRequestURI("http://agentauth/api/v2/sessions")
			req.Header.Set("Authorization", bearer(keyAdmin))
			b.ReportAllocs()
			size := 0
			for b.Loop() {
				if err := client.Do(req, res); err != nil || res.StatusCode() != 200 {
					b.Fatalf("GET = %d, %v", res.StatusCode(), err)
				}
				size = len(res.Body())
			}
			b.ReportMetric(float64(size), "bytes/answer")
		})
	}
}
