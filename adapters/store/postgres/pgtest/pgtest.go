// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema in the test server, selected through search_path in the returned
// URL and dropped when the test ends. Several stores opened on that URL share
// the schema exactly as several service instances share a database.
//
// The server is AGENTAUTH_TEST_DATABASE_URL, else 127.0.0.1:5432, database
// test, user postgres (then root), trust authentication. When it cannot be
// reached the test fails with instructions, unless AGENTAUTH_SKIP_POSTGRES=1,
// in which case it is skipped.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Candidates tried, in order, when AGENTAUTH_TEST_DATABASE_URL is not set.
var defaultURLs = []string{
	"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
	"postgres://root@127.0.0.1:5432/test?sslmode=disable",
}

// URL creates a schema for t and returns a connection string that uses it.
func URL(t testing.TB) string {
	t.Helper()
	if os.Getenv("AGENTAUTH_SKIP_POSTGRES") == "1" {
		t.Skip("AGENTAUTH_SKIP_POSTGRES=1: PostgreSQL tests skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	candidates := defaultURLs
	if u := os.Getenv("AGENTAUTH_TEST_DATABASE_URL"); u != "" {
		candidates = []string{u}
	}
	var (
		conn    *pgx.Conn
		baseURL string
		errs    []string
	)
	for _, u := range candidates {
		c, err := pgx.Connect(ctx, u)
		if err == nil {
			conn, baseURL = c, u
			break
		}
		errs = append(errs, err.Error())
	}
	if conn == nil {
		t.Fatalf("PostgreSQL is not reachable (%s).\n"+
			"Start it (e.g. pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start), "+
			"point AGENTAUTH_TEST_DATABASE_URL at a server with a database you may create schemas in, "+
			"or set AGENTAUTH_SKIP_POSTGRES=1 to skip these tests.", strings.Join(errs, "; "))
	}
	defer conn.Close(context.Background())

	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "agentauth_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create test schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, baseURL)
		if err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, baseURL, schema)
}

// withSearchPath adds search_path to a URL or keyword/value connection string.
func withSearchPath(t testing.TB, base, schema string) string {
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("AGENTAUTH_TEST_DATABASE_URL is not a valid URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
