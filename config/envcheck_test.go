package config

import (
	"strings"
	"testing"
)

// TestUnknownServiceVariables: every SERVICE_* variable that is not a
// setting is named with the nearest setting. One that is meant for
// agentauth (a near miss of a setting's name, or a word only agentauth's
// settings begin with) stops the start; one of a Kubernetes service link
// (a Service whose name begins with "service") is not agentauth's and is
// passed over; any other is ignored with a warning, since other tools set
// SERVICE_* variables too.
func TestUnknownServiceVariables(t *testing.T) {
	tests := []struct {
		name, variable, value string
		want                  verdict
		nearest               string
	}{
		{"a setting", "SERVICE_OIDC_ENABLED", "true", known, ""},
		{"a secret setting", "SERVICE_OIDC_CLIENT_SECRET", "s3cret", known, ""},
		{"not ours", "OIDC_ENABLED", "true", known, ""},
		{"letter missing", "SERVICE_OIDC_ENABLE", "true", refused, "SERVICE_OIDC_ENABLED"},
		{"underscore missing", "SERVICE_APIKEY", "0123456789abcdef0123", refused, "SERVICE_API_KEY"},
		{"letters swapped", "SERVICE_OIDC_ISUSER", "https://idp", refused, "SERVICE_OIDC_ISSUER"},
		{"under a word of ours", "SERVICE_OIDC_SCOPE", "openid", refused, ""},
		{"a word of ours alone", "SERVICE_OIDC", "true", refused, ""},
		{"lower case", "service_api_key", "0123456789abcdef0123", refused, "SERVICE_API_KEY"},
		{"ours, shaped like a link", "SERVICE_MANAGMENT_PORT", "9090", refused, "SERVICE_MANAGEMENT_PORT"},
		{"a stray port word", "SERVICE_PORT_HTTP", "8080", refused, ""},
		{"another tool's", "SERVICE_NAME", "billing", ignored, ""},
		{"registrator's", "SERVICE_TAGS", "web,prod", ignored, ""},
		// Kubernetes service links of a Service named "service".
		{"link host", "SERVICE_SERVICE_HOST", "10.96.0.12", link, ""},
		{"link port", "SERVICE_SERVICE_PORT", "80", link, ""},
		{"link named port", "SERVICE_SERVICE_PORT_HTTP", "80", link, ""},
		{"link port url", "SERVICE_PORT_80_TCP", "tcp://10.96.0.12:80", link, ""},
		{"link proto", "SERVICE_PORT_80_TCP_PROTO", "tcp", link, ""},
		{"link port number", "SERVICE_PORT_80_TCP_PORT", "80", link, ""},
		{"link address", "SERVICE_PORT_80_TCP_ADDR", "10.96.0.12", link, ""},
		{"link IPv6 address", "SERVICE_PORT_53_UDP_ADDR", "fd00::a", link, ""},
		// ... of Services named service-oidc and service-management.
		{"link of service-oidc", "SERVICE_OIDC_SERVICE_HOST", "10.96.0.13", link, ""},
		{"link url of service-oidc", "SERVICE_OIDC_PORT", "tcp://10.96.0.13:8443", link, ""},
		{"link url of service-oidc, sctp", "SERVICE_OIDC_PORT_9_SCTP", "sctp://10.96.0.13:9", link, ""},
		// Named like a link, valued otherwise: someone set it.
		{"link name, not an address", "SERVICE_OIDC_SERVICE_HOST", "keycloak.example", refused, ""},
		{"link name, port of another", "SERVICE_PORT_80_TCP", "tcp://10.96.0.12:81", refused, ""},
		{"link name, no scheme", "SERVICE_OIDC_PORT", "8443", refused, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkVariable(tt.variable, tt.value)
			if got.verdict != tt.want {
				t.Errorf("%s=%s: got %s, want %s", tt.variable, tt.value, got.verdict, tt.want)
			}
			if tt.nearest != "" && got.nearest.Env != tt.nearest {
				t.Errorf("%s: nearest got %s, want %s", tt.variable, got.nearest.Env, tt.nearest)
			}
			if got.verdict == refused || got.verdict == ignored {
				if msg := got.message(); !strings.Contains(msg, tt.variable) || !strings.Contains(msg, got.nearest.Env) || strings.Contains(msg, tt.value) {
					t.Errorf("message %q: want it to name %s and %s, never the value", msg, tt.variable, got.nearest.Env)
				}
			}
		})
	}
}

// TestLoadRefusesAMisspeltVariable: Load reports a misspelt variable with
// the rest of the configuration's problems, naming the setting meant and
// never the value (it may be a secret); a warning is not a problem.
func TestLoadRefusesAMisspeltVariable(t *testing.T) {
	_, err := Load("", map[string]string{"SERVICE_OIDC_ENABLE": "true", "SERVICE_APIKEY": "0123456789abcdef-secret", "SERVICE_PORT": "eighty",
		"SERVICE_NAME": "billing", "SERVICE_SERVICE_HOST": "10.96.0.12"})
	if err == nil {
		t.Fatal("Load succeeded, want the misspelt variables refused")
	}
	msg := err.Error()
	for _, want := range []string{
		"SERVICE_OIDC_ENABLE is not a setting of agentauth; did you mean SERVICE_OIDC_ENABLED (auth.oidc.enabled)?",
		"SERVICE_APIKEY is not a setting of agentauth; did you mean SERVICE_API_KEY?",
		`SERVICE_PORT="eighty" is not valid`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	for _, never := range []string{"secret", "SERVICE_NAME", "SERVICE_SERVICE_HOST"} {
		if strings.Contains(msg, never) {
			t.Errorf("%q in:\n%s", never, msg)
		}
	}
	if got := IgnoredVariables(map[string]string{"SERVICE_NAME": "billing", "SERVICE_OIDC_ENABLE": "true", "SERVICE_SERVICE_HOST": "10.96.0.12"}); len(got) != 1 || !strings.Contains(got[0], "SERVICE_NAME") {
		t.Errorf("IgnoredVariables: got %q, want one line naming SERVICE_NAME", got)
	}
}

// TestServiceLinkOnASetting: a Service named "service" makes Kubernetes set
// SERVICE_PORT=tcp://IP:port in every pod of its namespace; the refusal says
// where the value came from and how to keep it out.
func TestServiceLinkOnASetting(t *testing.T) {
	for _, env := range []map[string]string{{"SERVICE_PORT": "tcp://10.96.0.12:80"}, {"SERVICE_MANAGEMENT_PORT": "tcp://10.96.0.14:9090"}} {
		_, err := Load("", env)
		if err == nil {
			t.Fatalf("%v: Load succeeded", env)
		}
		for name := range env {
			for _, want := range []string{name + `="tcp://`, "Kubernetes service link", "enableServiceLinks: false"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("missing %q in:\n%s", want, err)
				}
			}
		}
	}
}
