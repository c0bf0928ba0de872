package postgres

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/ports"
)

var _ ports.LoginSessionWatcher = (*Store)(nil)

// loginChannel is the NOTIFY channel of migration 0006_login_notify.
const loginChannel = "agentauth_login_sessions"

// relistenAfter is the pause before listening again after the connection
// was lost; meanwhile sessions are read from the database.
const relistenAfter = time.Second

// WatchLoginSessions listens on one connection of its own for the
// notifications the login_sessions triggers send at commit, from every
// instance. When the connection is lost it reports live(false) at once and
// listens again.
func (s *Store) WatchLoginSessions(ctx context.Context, changed func(idHash string), live func(bool)) {
	defer live(false)
	for {
		err := s.listen(ctx, changed, live)
		live(false)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("login session notifications interrupted; sessions are read from the database until they are back", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(relistenAfter):
		}
	}
}

func (s *Store) listen(ctx context.Context, changed func(string), live func(bool)) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // held for as long as it listens, outside the pool
	defer conn.Close(context.Background())
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+loginChannel); err != nil {
		return err
	}
	live(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if sch, hash, ok := strings.Cut(n.Payload, " "); ok && sch == schema {
			changed(hash)
		}
	}
}
