package approvalhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
)

var testSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-32-byte-secret-for-the-tests!!"))

// receiver is a webhook endpoint that verifies every POST with the
// Standard Webhooks library, as a receiver would, and answers what fail
// says for each attempt.
type receiver struct {
	t        *testing.T
	wh       *standardwebhooks.Webhook
	mu       sync.Mutex
	got      []received
	fail     func(attempt int) int // the status of the attempt, 1 first
	arrivals chan received
}

type received struct {
	id   string
	body message
	raw  []byte
}

func newReceiver(t *testing.T, fail func(int) int) (*receiver, *httptest.Server) {
	wh, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, wh: wh, fail: fail, arrivals: make(chan received, 100)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	if err := r.wh.Verify(raw, req.Header); err != nil {
		r.t.Errorf("the signature does not verify: %v", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		r.t.Errorf("not JSON: %v", err)
	}
	rec := received{id: req.Header.Get(standardwebhooks.HeaderWebhookID), body: m, raw: raw}
	r.mu.Lock()
	r.got = append(r.got, rec)
	n := len(r.got)
	r.mu.Unlock()
	r.arrivals <- rec
	if r.fail != nil {
		if status := r.fail(n); status != 0 {
			w.WriteHeader(status)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// next waits for the next POST.
func (r *receiver) next(t *testing.T) received {
	t.Helper()
	select {
	case rec := <-r.arrivals:
		return rec
	case <-time.After(30 * time.Second): // a bound, not a wait: a delivery is near-instant
		t.Fatal("no webhook arrived")
		return received{}
	}
}

func approval(status domain.ToolCallStatus) domain.Approval {
	args := []byte(`{"content":"<https://evil.example|Approve> ` + "`x`" + ` & more","path":"/etc/app.conf"}`)
	c := domain.ToolCall{ID: "call_1", Session: "ses_1", Agent: "agt_2", Tool: "fs.write", Status: status, RequestedBy: "agent:agt_2",
		CreatedAt: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Arguments: args, ArgsHash: domain.ArgumentsHash(args),
		Decision: domain.ToolDecision{Effect: domain.EffectAsk, Reason: domain.ReasonPolicyAsk, Rule: "pol_9", Message: "policy rule pol_9 requires approval for tool fs.write"}}
	if status != domain.CallPending {
		c.ResolvedBy, c.ResolvedAt = "lea", c.CreatedAt.Add(time.Minute)
	}
	return domain.Approval{Call: c, Session: domain.Session{ID: "ses_1", Title: "deploy [click](https://evil.example)", Owner: "uma", Mode: domain.ModeAuto},
		Chain: []string{"agt_1", "agt_2"}, ChainNames: []string{"", "notes <agent>"}, Names: map[string]string{"uma": "Uma", "lea": "Lea Lead"},
		Tool: &domain.Tool{Name: "fs.write", Description: "Writes a file."}}
}

func start(t *testing.T, set Settings) (*Notifier, func()) {
	t.Helper()
	if set.Secret == "" {
		set.Secret = testSecret
	}
	set.ConsoleURL = "https://agentauth.example/base/"
	n, stop, err := New(set, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return n, stop
}

// count reads the notices counted with outcome from the registry /metrics
// serves.
func count(t *testing.T, outcome string) float64 {
	t.Helper()
	families, err := telemetry.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "agentauth_approval_webhook_notices_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestNoticeIsSignedAndWhole: a call that starts to wait and its outcome
// each reach the webhook signed (the Standard Webhooks library verifies
// them), with everything an approver needs and the console URL to approve.
func TestNoticeIsSignedAndWhole(t *testing.T) {
	r, srv := newReceiver(t, nil)
	n, _ := start(t, Settings{URL: srv.URL})
	n.Notify(context.Background(), approval(domain.CallPending))
	got := r.next(t)
	m := got.body
	d := m.Data
	if got.id != "msg_call_1_pending" || m.Type != "approval.requested" || d.Call != "call_1" || d.Status != "pending" || d.Tool != "fs.write" ||
		d.ToolDescription != "Writes a file." || d.ArgsSHA256 != approval(domain.CallPending).Call.ArgsHash || d.Session.Title != "deploy [click](https://evil.example)" ||
		strings.Join(d.AgentChain, ",") != "agt_1,agt_2" || d.RequestedBy != "agent:agt_2" || d.Rule != "pol_9" || d.Reason != "policy_ask" ||
		d.ConsoleURL != "https://agentauth.example/base/console/approvals#call-call_1" {
		t.Errorf("requested notice = %s", got.raw)
	}
	// Names ride beside the ids, never in their place.
	if strings.Join(d.AgentChainNames, ",") != ",notes <agent>" || d.Session.OwnerName != "Uma" || d.Session.Owner != "uma" || d.RequestedByName != "" || d.ResolvedByName != "" {
		t.Errorf("requested notice names = %q, owner %q, asker %q, resolver %q", d.AgentChainNames, d.Session.OwnerName, d.RequestedByName, d.ResolvedByName)
	}
	if string(d.Arguments) != string(approval(domain.CallPending).Call.Arguments) || domain.ArgumentsHash(d.Arguments) != d.ArgsSHA256 {
		t.Errorf("arguments = %s, want the very bytes args_sha256 hashes", d.Arguments)
	}
	// The text a chat tool shows: everything a caller chose is quoted,
	// nothing of it reads as a link or as formatting.
	for _, bad := range []string{"<https://evil", "`x`"} {
		if strings.Contains(m.Text, bad) {
			t.Errorf("text carries %q as markup: %s", bad, m.Text)
		}
	}
	for _, want := range []string{`\u003chttps://evil.example|Approve\u003e`, "`\"deploy [click](https://evil.example)\"`", // a code span: no link
		"https://agentauth.example/base/console/approvals#call-call_1", "`\"pol_9\"`"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %s: %s", want, m.Text)
		}
	}

	n.Notify(context.Background(), approval(domain.CallApproved))
	got = r.next(t)
	if got.id != "msg_call_1_approved" || got.body.Type != "approval.approved" || got.body.Data.ResolvedBy != "lea" || got.body.Data.ResolvedByName != "Lea Lead" || got.body.Data.ResolvedAt == nil ||
		!strings.Contains(got.body.Text, "approved by `\"lea\"`") {
		t.Errorf("outcome notice = %s", got.raw)
	}
}

// TestRetriedThenDelivered: a receiver that fails twice gets the notice a
// third time, with the same webhook-id (its deduplication key) and a fresh
// signature; the failed attempts are counted.
func TestRetriedThenDelivered(t *testing.T) {
	r, srv := newReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	failed, delivered := count(t, telemetry.WebhookAttemptFailed), count(t, telemetry.WebhookDelivered)
	// One worker: the notice that comes after the third attempt is
	// delivered once that attempt has finished and is counted.
	n, stop := start(t, Settings{URL: srv.URL, Backoff: time.Millisecond, Workers: 1})
	n.Notify(context.Background(), approval(domain.CallPending))
	ids := []string{r.next(t).id, r.next(t).id, r.next(t).id}
	n.Notify(context.Background(), approval(domain.CallApproved))
	if after := r.next(t); after.id != "msg_call_1_approved" {
		t.Fatalf("then %s, want the next notice", after.id)
	}
	defer stop()
	if ids[0] != "msg_call_1_pending" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("webhook-ids %v, want one id for every attempt", ids)
	}
	if got := count(t, telemetry.WebhookAttemptFailed) - failed; got != 2 {
		t.Errorf("%v failed attempts counted, want 2", got)
	}
	if got := count(t, telemetry.WebhookDelivered) - delivered; got != 1 && got != 2 {
		t.Errorf("%v deliveries counted, want the third attempt's (and the next notice's, when its answer is in)", got)
	}
}

// TestGivesUp: a receiver that always fails gets Attempts attempts, then
// the notice is given up, counted.
func TestGivesUp(t *testing.T) {
	r, srv := newReceiver(t, func(int) int { return http.StatusInternalServerError })
	givenUp := count(t, telemetry.WebhookGivenUp)
	n, stop := start(t, Settings{URL: srv.URL, Attempts: 3, Backoff: time.Millisecond})
	n.Notify(context.Background(), approval(domain.CallRejected))
	for range 3 {
		r.next(t)
	}
	stop()
	if got := count(t, telemetry.WebhookGivenUp) - givenUp; got != 1 {
		t.Errorf("%v notices given up, want 1", got)
	}
	select {
	case <-r.arrivals:
		t.Error("a fourth attempt")
	default:
	}
}

// TestNeverBlocks: while the receiver hangs, Notify returns at once; past
// the queue's room notices are dropped, counted.
func TestNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(release) })
	dropped := count(t, telemetry.WebhookDropped)
	n, stop := start(t, Settings{URL: hanging.URL, Queue: 1, Timeout: time.Hour})
	for range 10 { // 2 in the workers' hands, 1 queued, the rest dropped
		n.Notify(context.Background(), approval(domain.CallPending))
	}
	if got := count(t, telemetry.WebhookDropped) - dropped; got < 7 {
		t.Errorf("%v notices dropped, want at least 7 of 10 with room for 3", got)
	}
	stop()
}

// TestSecretRefused: a secret that is not whsec_ and base64 is refused.
func TestSecretRefused(t *testing.T) {
	for _, s := range []string{"", "plain-secret", "whsec_not base64!"} {
		if _, _, err := New(Settings{URL: "http://127.0.0.1:9", Secret: s}, zap.NewNop()); err == nil {
			t.Errorf("secret %q accepted", s)
		}
	}
}

// BenchmarkNotice: encoding and signing one notice with the Standard
// Webhooks library (what a decision that asks pays besides queueing: none
// of the delivery).
func BenchmarkNotice(b *testing.B) {
	n, stop, err := New(Settings{URL: "http://127.0.0.1:9", Secret: testSecret, Queue: 1}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	a := approval(domain.CallPending)
	b.ReportAllocs()
	for b.Loop() {
		body, _ := json.Marshal(n.message(a, time.Now()))
		if _, err := n.wh.Sign("msg_call_1_pending", time.Now(), body); err != nil {
			b.Fatal(err)
		}
	}
}
