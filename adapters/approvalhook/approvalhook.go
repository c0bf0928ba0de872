// Package approvalhook tells approvers outside agentauth of tool calls that
// wait for them, and of their outcomes, by POSTing each as JSON to one
// webhook signed as the Standard Webhooks specification defines
// (webhook-id, webhook-timestamp, webhook-signature: v1,<base64
// HMAC-SHA256>), with the specification's own Go library. Deliveries are
// queued and retried with backoff, never on a decision's way; failures are
// counted (telemetry.ApprovalWebhook).
package approvalhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/telemetry"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Settings configure the webhook.
type Settings struct {
	// URL receives the POSTs; Secret ("whsec_" and base64) signs them.
	URL    string
	Secret string
	// ConsoleURL is the public URL the console is served under (the
	// API's, with the base path): each notice links to
	// {ConsoleURL}/console/approvals#call-{id}.
	ConsoleURL string
	// Attempts bounds the deliveries of one notice; the n-th retry waits
	// Backoff·2ⁿ⁻¹. Timeout bounds one attempt; Queue the notices waiting.
	// Zero: 6 attempts (over about a minute), 2 s, 10 s, 1000.
	Attempts int
	Backoff  time.Duration
	Timeout  time.Duration
	Queue    int
	// Workers deliver notices at once, so that one slow attempt does not
	// hold every other notice back; zero: 2.
	Workers int
	// Client sends the POSTs; nil: one that follows no redirect.
	Client *http.Client
}

// Notifier delivers approval notices to the webhook.
type Notifier struct {
	set   Settings
	wh    *standardwebhooks.Webhook
	log   *zap.Logger
	queue chan *notice
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

var _ ports.ApprovalNotifier = (*Notifier)(nil)

// notice is one signed message and the attempts made to deliver it.
type notice struct {
	id       string
	body     []byte
	attempts int
}

// New starts delivering; stop ends it, giving up what waits (counted).
func New(set Settings, log *zap.Logger) (n *Notifier, stop func(), err error) {
	if !strings.HasPrefix(set.Secret, "whsec_") {
		return nil, nil, errors.New("approvals webhook secret: want whsec_ followed by base64")
	}
	wh, err := standardwebhooks.NewWebhook(set.Secret)
	if err != nil {
		return nil, nil, fmt.Errorf("approvals webhook secret: %w", err)
	}
	if set.Attempts <= 0 {
		set.Attempts = 6
	}
	if set.Backoff <= 0 {
		set.Backoff = 2 * time.Second
	}
	if set.Timeout <= 0 {
		set.Timeout = 10 * time.Second
	}
	if set.Queue <= 0 {
		set.Queue = 1000
	}
	if set.Workers <= 0 {
		set.Workers = 2
	}
	if set.Client == nil {
		set.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n = &Notifier{set: set, wh: wh, log: log, queue: make(chan *notice, set.Queue), ctx: ctx, stop: cancel}
	for range set.Workers {
		n.wg.Add(1)
		go n.work()
	}
	return n, func() {
		cancel()
		n.wg.Wait()
		for {
			select {
			case <-n.queue:
				telemetry.ApprovalWebhook(telemetry.WebhookGivenUp)
			default:
				return
			}
		}
	}, nil
}

// Notify queues the notice of a; a full queue drops it (counted, logged):
// a decision never waits for the webhook.
func (n *Notifier) Notify(_ context.Context, a domain.Approval) {
	// Not HTML-escaped: data.arguments are the very bytes args_sha256 is
	// the hash of.
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(n.message(a, time.Now().UTC())); err != nil { // plain data: cannot happen
		n.log.Error("approvals webhook: encode", zap.Error(err))
		return
	}
	m := &notice{id: "msg_" + a.Call.ID + "_" + string(a.Call.Status), body: bytes.TrimSuffix(body.Bytes(), []byte("\n"))}
	if !n.enqueue(m) {
		n.log.Warn("approvals webhook: queue full, notice dropped", zap.String("call", a.Call.ID), zap.String("status", string(a.Call.Status)))
	}
}

// enqueue queues m unless the queue is full or stopped (counted).
func (n *Notifier) enqueue(m *notice) bool {
	if n.ctx.Err() != nil {
		telemetry.ApprovalWebhook(telemetry.WebhookGivenUp)
		return false
	}
	select {
	case n.queue <- m:
		return true
	default:
		telemetry.ApprovalWebhook(telemetry.WebhookDropped)
		return false
	}
}

func (n *Notifier) work() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case m := <-n.queue:
			n.deliver(m)
		}
	}
}

// deliver makes one attempt; a failed one is queued again after its
// backoff (no worker waits for it), until the attempts run out.
func (n *Notifier) deliver(m *notice) {
	m.attempts++
	err := n.post(m)
	if err == nil {
		telemetry.ApprovalWebhook(telemetry.WebhookDelivered)
		return
	}
	telemetry.ApprovalWebhook(telemetry.WebhookAttemptFailed)
	if m.attempts >= n.set.Attempts {
		telemetry.ApprovalWebhook(telemetry.WebhookGivenUp)
		n.log.Warn("approvals webhook: gave up", zap.String("webhook_id", m.id), zap.Int("attempts", m.attempts), zap.Error(err))
		return
	}
	n.log.Info("approvals webhook: attempt failed, retrying", zap.String("webhook_id", m.id), zap.Int("attempt", m.attempts), zap.Error(err))
	wait := n.set.Backoff << (m.attempts - 1)
	n.wg.Add(1) // the worker's own count is held: Wait cannot be at zero
	go func() {
		defer n.wg.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			n.enqueue(m)
		case <-n.ctx.Done():
			telemetry.ApprovalWebhook(telemetry.WebhookGivenUp)
		}
	}()
}

// post sends m once, signed anew (its id stays, its timestamp is now).
func (n *Notifier) post(m *notice) error {
	at := time.Now()
	sig, err := n.wh.Sign(m.id, at, m.body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.set.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.set.URL, bytes.NewReader(m.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentauth-approvals")
	req.Header.Set(standardwebhooks.HeaderWebhookID, m.id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(at.Unix()))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	res, err := n.set.Client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("the webhook answered HTTP %d", res.StatusCode)
	}
	return nil
}
