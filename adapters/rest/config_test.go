package rest_test

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
)

// TestNewRefusesConfig: the server takes its settings as given (their
// defaults live in config.Defaults) and refuses what it cannot run with.
func TestNewRefusesConfig(t *testing.T) {
	login := rest.NewKeyLogin(rest.KeyLoginConfig{}, zap.NewNop())
	tests := []struct {
		name    string
		cfg     rest.Config
		wantErr bool
	}{
		{"shutdown timeout given", rest.Config{ShutdownTimeout: time.Second}, false},
		{"no shutdown timeout", rest.Config{}, true},
		{"negative shutdown timeout", rest.Config{ShutdownTimeout: -time.Second}, true},
		{"login endpoints without the login use case", rest.Config{ShutdownTimeout: time.Second, Login: login}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rest.New(tt.cfg, app.Application{}, zap.NewNop())
			if got := err != nil; got != tt.wantErr {
				t.Errorf("got error %v, want an error: %v", err, tt.wantErr)
			}
		})
	}
}
