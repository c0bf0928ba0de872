package config

import (
	"fmt"

	"github.com/agentauth/agentauth/adapters/store/postgres"
)

// validateDatabase checks database.url / SERVICE_DATABASE_URL when it is
// set (empty selects the embedded SQLite file). Messages never repeat the
// URL: it may carry a password.
func (c Config) validateDatabase() []error {
	if c.Database.URL == "" {
		return nil
	}
	if err := postgres.CheckURL(c.Database.URL); err != nil {
		return []error{fmt.Errorf("database.url / SERVICE_DATABASE_URL: %v", err)}
	}
	return nil
}
