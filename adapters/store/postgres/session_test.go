package postgres

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

func TestSessionDefaultsAndOverrides(t *testing.T) {
	base := pgtest.URL(t)
	tests := []struct {
		name string
		url  string
		want map[string]string
	}{
		{"defaults", base, map[string]string{"statement_timeout": "30s", "lock_timeout": "30s", "idle_in_transaction_session_timeout": "1min"}},
		{"the URL wins", base + "&statement_timeout=5000&idle_in_transaction_session_timeout=0", map[string]string{"statement_timeout": "5s", "lock_timeout": "30s", "idle_in_transaction_session_timeout": "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, closeStore, err := Open(context.Background(), URL(tt.url), zap.NewNop())
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer closeStore()
			for name, want := range tt.want {
				var got string
				if err := st.pool.QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&got); err != nil {
					t.Fatalf("current_setting(%s): %v", name, err)
				}
				if got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}
