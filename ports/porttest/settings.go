package porttest

import (
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
