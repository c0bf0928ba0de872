package auditlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/store/postgres"
	"github.com/agentauth/agentauth/adapters/store/postgres/pgtest"
	"github.com/agentauth/agentauth/domain"
)

// On real PostgreSQL a record the database refuses (here: a trigger raising
// a data exception for one request id, as a value out of a column's range
// would) fails only its own request; every other request of the batch is
// committed and the chain verifies.
func TestPostgresRefusingOneRecordFailsOnlyItsRequest(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	st, closeStore, err := postgres.Open(ctx, postgres.URL(url), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `
		CREATE FUNCTION refuse_marked() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.request_id LIKE 'refuse-%' THEN
				RAISE EXCEPTION 'value out of range' USING ERRCODE = '22003';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_marked BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION refuse_marked();`); err != nil {
		t.Fatal(err)
	}
	c, closeC := auditlog.New(st, auditlog.Options{BatchWait: 5 * time.Millisecond}, zap.NewNop())
	defer closeC()
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprint("req-", i)
		if i == 7 || i == 50 {
			ids[i] = fmt.Sprint("refuse-", i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := record(i)
			r.RequestID = ids[i]
			errs[i] = c.Record(ctx, r)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		refused := ids[i] != fmt.Sprint("req-", i)
		if refused != (err != nil) {
			t.Errorf("%s: Record = %v", ids[i], err)
		}
		if refused && !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable (503)", ids[i], err)
		}
	}
	chain(t, st, n-2)
}
