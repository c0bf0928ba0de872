package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentauth/agentauth/domain"
)

// settingsRow is the stored form (the same JSON as SQLite's); fields absent
// from an older row keep their defaults.
type settingsRow struct {
	SecurityGateway    bool   `json:"security_gateway"`
	DefaultSessionMode string `json:"default_session_mode"`
}

// GetSettings returns the saved settings, or the defaults.
func (s *Store) GetSettings(ctx context.Context) (domain.Settings, error) {
	var body string
	err := s.pool.QueryRow(ctx, `SELECT body FROM settings WHERE id = 1`).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.DefaultSettings(), nil
	}
	if err != nil {
		return domain.Settings{}, storeErr("read settings", err)
	}
	def := domain.DefaultSettings()
	row := settingsRow{SecurityGateway: def.SecurityGateway, DefaultSessionMode: string(def.DefaultSessionMode)}
	if err := json.Unmarshal([]byte(body), &row); err != nil {
		return domain.Settings{}, fmt.Errorf("postgres: decode settings: %w", err)
	}
	return domain.Settings{SecurityGateway: row.SecurityGateway, DefaultSessionMode: domain.SessionMode(row.DefaultSessionMode)}, nil
}

// PutSettings replaces the settings.
func (s *Store) PutSettings(ctx context.Context, st domain.Settings) error {
	body, err := json.Marshal(settingsRow{SecurityGateway: st.SecurityGateway, DefaultSessionMode: string(st.DefaultSessionMode)})
	if err != nil {
		return fmt.Errorf("postgres: encode settings: %w", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO settings (id, body) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET body = excluded.body`, string(body))
	if err != nil {
		return storeErr("save settings", err)
	}
	return nil
}
