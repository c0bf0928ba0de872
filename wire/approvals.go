package wire

// The approvals webhook: approvers told outside agentauth.

import (
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/approvalhook"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/ports"
)

// approvalNotifier is the approvals webhook when approvals.webhookURL is
// set, else none (a nil port). Notices link to the console under the API's
// public URL (gateway.resourceURL, else the listener's); stopping gives up
// what waits.
func approvalNotifier(cfg config.Config, log *zap.Logger) (ports.ApprovalNotifier, func(), error) {
	a := cfg.Approvals
	if a.WebhookURL == "" {
		return nil, func() {}, nil
	}
	n, stop, err := approvalhook.New(approvalhook.Settings{URL: a.WebhookURL, Secret: a.WebhookSecret, ConsoleURL: cfg.GatewayResourceURL()},
		log.Named("approvals"))
	if err != nil {
		return nil, nil, err
	}
	return n, stop, nil
}
