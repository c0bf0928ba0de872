package rest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Check is one thing requests need (the database, the audit log), tested by
// Probe: nil while it can serve, else an error saying what is wrong.
type Check struct {
	Name  string
	Probe func(context.Context) error
}

// ReadyChecks are the checks of readiness besides the identity provider's,
// which the Login endpoints bring along in OIDC mode.
type ReadyChecks []Check

// Probe timing: a probe that has not answered within probeTimeout fails,
// and results are reused for probeReuse, so that the unauthenticated GET
// /health cannot be turned into load on the database.
const (
	probeTimeout = 2 * time.Second
	probeReuse   = time.Second
)

// Check states.
const (
	checkOK = "ok"
	// checkFailing prefixes what a failed probe said.
	checkFailing = "failing: "
)

// readiness answers whether the service can serve requests, check by check.
// Liveness never asks it: a process that answers HTTP is alive whatever its
// dependencies say.
type readiness struct {
	checks ReadyChecks
	oidc   HealthChecker // nil outside OIDC mode
	// stopping is set when shutdown begins: not ready for new requests.
	stopping atomic.Bool

	mu     sync.Mutex
	at     time.Time
	probed map[string]string
}

// report runs the checks and returns whether all pass and each one's state
// ("ok" or what is wrong). The map is the caller's.
func (r *readiness) report(ctx context.Context) (bool, map[string]string) {
	out := make(map[string]string, len(r.checks)+3)
	r.mu.Lock() // one probe run at a time: concurrent callers share its result
	if r.probed == nil || time.Since(r.at) >= probeReuse {
		r.probed = make(map[string]string, len(r.checks))
		for _, c := range r.checks {
			r.probed[c.Name] = runProbe(ctx, c.Probe)
		}
		r.at = time.Now()
	}
	for k, v := range r.probed {
		out[k] = v
	}
	r.mu.Unlock()
	if r.oidc != nil {
		for k, v := range r.oidc.Checks() {
			out[k] = v
		}
	}
	if r.stopping.Load() {
		out["shutdown"] = checkFailing + "shutting down"
	}
	ready := true
	for _, v := range out {
		if v != checkOK {
			ready = false
		}
	}
	return ready, out
}

func runProbe(ctx context.Context, probe func(context.Context) error) string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := probe(ctx); err != nil {
		return checkFailing + err.Error()
	}
	return checkOK
}

// summary keeps the first words of a check's state ("failing", "pending",
// "provider certificate not trusted"): GET /health on the API port needs no
// credential, so it names what is not ready without the error text, which
// may carry internal addresses. The management listener shows all of it.
func summary(checks map[string]string) map[string]string {
	out := make(map[string]string, len(checks))
	for k, v := range checks {
		if v == checkOK {
			continue
		}
		head, _, _ := strings.Cut(v, ":")
		out[k] = head
	}
	return out
}

// okBody is the answer of a healthy service, built once.
var okBody = []byte(`{"status":"ok"}`)

// health is GET /health on the API port: 200 while the process serves, with
// {"status":"ok"}, or {"status":"degraded","checks":{…}} naming each check
// that is not ready. It is liveness, so it never fails on a dependency;
// readiness with details is on the management listener.
func (s *Server) health(c *fiber.Ctx) error {
	ready, checks := s.ready.report(c.UserContext())
	if ready {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(okBody)
	}
	return c.JSON(fiber.Map{"status": "degraded", "checks": summary(checks)})
}
