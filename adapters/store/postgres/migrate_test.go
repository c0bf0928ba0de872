package postgres_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
)

// TestInstancesStartingTogetherMigrateOnce opens several stores at once on
// an empty schema, as replicas starting together do: every one must start,
// and each migration must be applied exactly once.
func TestInstancesStartingTogetherMigrateOnce(t *testing.T) {
	url := pgtest.URL(t)
	const instances = 6
	var (
		wg   sync.WaitGroup
		errs = make([]error, instances)
	)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, closeStore, err := postgres.Open(context.Background(), postgres.URL(url), zap.NewNop())
			if err == nil {
				closeStore()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d failed to start: %v", i, err)
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT version FROM schema_migrations ORDER BY version`)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	// Every migration file, in name order (tests run in the package folder).
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("list migrations: %v (%d files)", err, len(files))
	}
	var want []string
	for _, f := range files {
		want = append(want, strings.TrimSuffix(filepath.Base(f), ".sql"))
	}
	if len(versions) != len(want) {
		t.Fatalf("schema_migrations = %v, want %v", versions, want)
	}
	for i := range want {
		if versions[i] != want[i] {
			t.Errorf("schema_migrations = %v, want %v", versions, want)
			break
		}
	}
	var heads int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM audit_head`).Scan(&heads); err != nil || heads != 1 {
		t.Errorf("audit_head rows = %d, %v; want exactly 1", heads, err)
	}
}
