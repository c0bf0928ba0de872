package app

import (
	"context"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Settings reads and changes the service-wide settings.
type Settings struct {
	store ports.SettingsStore
}

// NewSettings wires the use case.
func NewSettings(store ports.SettingsStore) *Settings { return &Settings{store: store} }

// Get returns the settings in force.
func (s *Settings) Get(ctx context.Context) (domain.Settings, error) { return s.store.GetSettings(ctx) }

// Put validates and saves new settings.
func (s *Settings) Put(ctx context.Context, next domain.Settings) error {
	if err := next.Validate(); err != nil {
		return err
	}
	return s.store.PutSettings(ctx, next)
}
