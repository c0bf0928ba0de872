package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

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
	// Registered, so that logouts and key revocations wait for this
	// listener's acknowledgements; rows of backends gone are ignored
	// (Listeners).
	pid := strconv.FormatUint(uint64(conn.PgConn().PID()), 10)
	if _, err := conn.Exec(ctx, `INSERT INTO key_listeners (pid, since) VALUES (pg_backend_pid(), $1)
		ON CONFLICT (pid) DO UPDATE SET since = excluded.since`, time.Now().UnixNano()); err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, `DELETE FROM key_listeners WHERE pid = pg_backend_pid()`)
	}()
	live(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		sch, report, ok := strings.Cut(n.Payload, " ")
		if !ok || sch != schema {
			continue
		}
		changed(report)
		if _, _, isAck := ports.AckOf(report); isAck {
			continue
		}
		// Acted on (changed has returned): say so to the instance that
		// made the change, which answers once every listener has.
		if _, err := conn.Exec(ctx, `SELECT pg_notify($1, $2)`, loginChannel, schema+" "+ports.Ack(pid, report)); err != nil {
			return err
		}
	}
}

// Listeners names the listening backends still connected.
func (s *Store) Listeners(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT l.pid::text FROM key_listeners l JOIN pg_stat_activity a ON a.pid = l.pid AND a.datname = current_database()`)
	if err != nil {
		return nil, storeErr("list listeners", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, storeErr("list listeners", err)
	}
	return out, nil
}
