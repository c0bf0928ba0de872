package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// GetSettings returns the saved settings, or the defaults.
func (s *Store) GetSettings(ctx context.Context) (domain.Settings, error) {
	var body string
	err := s.queryRow(ctx, `SELECT body FROM settings WHERE id = 1`).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.DefaultSettings(), nil
	}
	if err != nil {
		return domain.Settings{}, fmt.Errorf("sqlite: read settings: %w", err)
	}
	st, err := domain.DecodeSettings([]byte(body))
	if err != nil {
		return domain.Settings{}, fmt.Errorf("sqlite: decode settings: %w", err)
	}
	return st, nil
}

// PutSettings replaces the settings.
func (s *Store) PutSettings(ctx context.Context, st domain.Settings) error {
	body, err := domain.EncodeSettings(st)
	if err != nil {
		return fmt.Errorf("sqlite: encode settings: %w", err)
	}
	return s.announced(ports.RegistryChangeKey(ports.RegistrySettings), s.exec(ctx, "save settings "+string(body), "settings",
		`INSERT INTO settings (id, body) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body`, string(body)))
}
