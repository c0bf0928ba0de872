package rest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

func TestPanicIsA500WithAnAuditRecord(t *testing.T) {
	h := start(t, options{routes: func(app *fiber.App) {
		app.Get("/api/v2/boom", func(*fiber.Ctx) error { panic("kaboom") })
	}})
	r := h.do(t, "GET", "/api/v2/boom", bearer(keyAdmin), "")
	e := checkError(t, r, 500, "internal")
	if got := string(r.body); strings.Contains(got, "kaboom") {
		t.Errorf("500 body leaks the panic: %s", got)
	}
	out := auditOut{}
	h.do(t, "GET", "/api/v2/audit?limit=5", bearer(keyAdmin), "").json(t, &out)
	for _, rec := range out.Records {
		if rec.RequestID == e.RequestID {
			if rec.Status != 500 {
				t.Errorf("audited status = %d, want 500", rec.Status)
			}
			return
		}
	}
	t.Errorf("no audit record for the panicking request %s", e.RequestID)
}

func TestUnauditableRequestIsRefused(t *testing.T) {
	ctrl := gomock.NewController(t)
	failing := mocks.NewMockAuditLog(ctrl)
	failing.EXPECT().Record(gomock.Any(), gomock.Any()).Return(errors.New("disk full")).AnyTimes()
	h := start(t, options{auditLog: func(ports.AuditStore) ports.AuditLog { return failing }})
	for _, path := range []string{"/api/v2/me", "/api/v2/sessions"} {
		r := h.do(t, "GET", path, bearer(keyAdmin), "")
		checkError(t, r, 503, "unavailable")
		if strings.Contains(string(r.body), "disk full") {
			t.Errorf("503 body leaks the cause: %s", r.body)
		}
	}
	// /health makes no access decision and does not depend on the audit log.
	if r := h.do(t, "GET", "/health", "", ""); r.status != 200 {
		t.Errorf("/health = %d, want 200", r.status)
	}
}

func TestAuditRecordCarriesTheCaller(t *testing.T) {
	ctrl := gomock.NewController(t)
	rec := mocks.NewMockAuditLog(ctrl)
	var got domain.AuditRecord
	rec.EXPECT().Record(gomock.Any(), gomock.Any()).DoAndReturn(func(_ any, r domain.AuditRecord) error { got = r; return nil })
	h := start(t, options{auditLog: func(ports.AuditStore) ports.AuditLog { return rec }})
	r := h.do(t, "GET", "/api/v2/admin/settings", bearer(keyLead), "")
	checkError(t, r, 403, "forbidden")
	want := domain.AuditRecord{RequestID: r.header.Get("X-Request-ID"), Subject: "lead", AuthMethod: domain.MethodAPIKey, Method: "GET",
		Path: "/api/v2/admin/settings", Decision: domain.AuditDeny, Reason: "role LEAD lacks settings:read", Status: 403}
	if got.RequestID != want.RequestID || got.Subject != want.Subject || got.AuthMethod != want.AuthMethod || got.Method != want.Method ||
		got.Path != want.Path || got.Decision != want.Decision || got.Reason != want.Reason || got.Status != want.Status ||
		len(got.Roles) != 1 || got.Roles[0] != domain.RoleLead || got.Time.IsZero() {
		t.Errorf("record = %+v, want %+v with roles [LEAD] and a time", got, want)
	}
}
