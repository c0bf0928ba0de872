package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// Approvals configures how approvers are told of the tool calls waiting
// for them, besides the console: a webhook signed as Standard Webhooks
// defines.
type Approvals struct {
	// WebhookURL receives a POST for each call that starts to wait and for
	// its outcome; empty: none is sent.
	WebhookURL string `yaml:"webhookURL" env:"SERVICE_APPROVALS_WEBHOOK_URL"`
	// WebhookSecretFile holds the signing secret, whsec_ and base64 (read
	// into WebhookSecret at load, by the rules of every secret file).
	WebhookSecretFile string `yaml:"webhookSecretFile" env:"SERVICE_APPROVALS_WEBHOOK_SECRET_FILE"`
	// WebhookSecret is the secret itself, a secret: environment only (a
	// Kubernetes secretKeyRef), never the config file.
	WebhookSecret string `yaml:"-" env:"SERVICE_APPROVALS_WEBHOOK_SECRET"`
}

// secretNames names the secret's two settings in messages.
var secretNames = names("approvals.webhookSecretFile") + " (or SERVICE_APPROVALS_WEBHOOK_SECRET)"

// Standard Webhooks' secrets are 24 to 64 random bytes.
const (
	minWebhookSecret = 24
	maxWebhookSecret = 64
)

func (c Config) validateApprovals() []error {
	a := c.Approvals
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case a.WebhookURL == "" && a.WebhookSecret != "":
		bad("%s is set without %s: set the URL the notices go to", secretNames, names("approvals.webhookURL"))
	case a.WebhookURL == "":
		return nil
	case a.WebhookSecret == "":
		bad("%s: required with %s (every notice is signed)", secretNames, names("approvals.webhookURL"))
	}
	if u, err := url.Parse(a.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		bad("%s: %q is not an http(s) URL without user information or fragment", names("approvals.webhookURL"), a.WebhookURL)
	}
	if a.WebhookSecret != "" {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a.WebhookSecret, "whsec_"))
		if !strings.HasPrefix(a.WebhookSecret, "whsec_") || err != nil || len(key) < minWebhookSecret || len(key) > maxWebhookSecret {
			bad("%s: want whsec_ followed by %d to %d random bytes in base64 (make one: echo whsec_$(head -c 32 /dev/urandom | base64))",
				secretNames, minWebhookSecret, maxWebhookSecret)
		}
	}
	return errs
}
