package porttest

import (
	"errors"
	"testing"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// RunSettingsStore checks a ports.SettingsStore.
func RunSettingsStore(t *testing.T, newStore Factory[ports.SettingsStore]) {
	t.Run("DefaultsWhenNoneSaved", func(t *testing.T) {
		got, err := newStore(t).GetSettings(ctxFor(t))
		if err != nil {
			t.Fatalf("GetSettings: %v", err)
		}
		if want := domain.DefaultSettings(); got != want {
			t.Errorf("GetSettings(nothing saved) = %+v, want %+v", got, want)
		}
	})
	t.Run("PutReplaces", func(t *testing.T) {
		st := newStore(t)
		ctx := ctxFor(t)
		for _, want := range []domain.Settings{
			{SecurityGateway: true, DefaultSessionMode: domain.ModeReadonly},
			{SecurityGateway: false, DefaultSessionMode: domain.ModeAuto},
			{SecurityGateway: true, DefaultSessionMode: domain.ModeAsk},
		} {
			if err := st.PutSettings(ctx, want); err != nil {
				t.Fatalf("PutSettings(%+v): %v", want, err)
			}
			got, err := st.GetSettings(ctx)
			if err != nil {
				t.Fatalf("GetSettings: %v", err)
			}
			if got != want {
				t.Errorf("GetSettings after PutSettings = %+v, want %+v", got, want)
			}
		}
	})
}

// WatchedRegistryStore keeps what a tool-call decision reads besides
// sessions and agents, and its watcher reports their changes.
type WatchedRegistryStore interface {
	ports.SettingsStore
	ports.CatalogStore
	ports.PolicyStore
	ports.LoginSessionWatcher
}

// RunRegistryWatcher checks that the watcher reports every change of the
// settings, a server, a tool or a policy rule, once committed, each then
// acknowledged by the listener: such a write waits for that to know every
// instance has forgotten what it kept (app.Registry.KeepInMemory). A write
// refused reports nothing.
func RunRegistryWatcher(t *testing.T, newStore Factory[WatchedRegistryStore]) {
	st, ctx := newStore(t), ctxFor(t)
	rule := domain.PolicyRule{ID: "pol_w1", Effect: domain.EffectDeny, Tool: "files.read", Scope: domain.ScopeRole, Value: "USER", CreatedBy: "admin", CreatedAt: base}
	checkReports(t, st, []watchedStep{
		{"settings", func() error {
			return st.PutSettings(ctx, domain.Settings{SecurityGateway: true, DefaultSessionMode: domain.ModeAuto})
		}},
		{"server", func() error {
			return st.CreateServer(ctx, domain.Server{Name: "files", URL: "https://files.example", CreatedAt: base})
		}},
		{"tool", func() error {
			return st.CreateTool(ctx, domain.Tool{Name: "files.read", Server: "files", CreatedAt: base})
		}},
		{"tool of no server (refused)", func() error {
			if err := st.CreateTool(ctx, domain.Tool{Name: "mail.send", Server: "mail", CreatedAt: base}); err == nil {
				return errors.New("registered a tool of no server")
			}
			return nil
		}},
		{"create policy", func() error { return st.CreatePolicy(ctx, rule) }},
		{"delete policy", func() error { return st.DeletePolicy(ctx, rule.ID) }},
	}, []string{
		ports.RegistryChangeKey(ports.RegistrySettings), ports.RegistryChangeKey(ports.RegistryServer + "files"),
		ports.RegistryChangeKey(ports.RegistryTool + "files.read"), ports.RegistryChangeKey(ports.RegistryPolicy + rule.ID),
		ports.RegistryChangeKey(ports.RegistryPolicy + rule.ID),
	})
}
