package sqlite

import (
	"strings"

	"github.com/agentauth/agentauth/ports"
)

// keyset renders one page of a list ordered newest first: the WHERE clause
// (where, ANDed, plus the rows strictly after p.After in the order
// created_at DESC, key DESC) and the ORDER BY and LIMIT, with their
// arguments appended to args. Each list has an index on
// (..., created_at, key), so a page is a range scan of at most p.Limit
// rows (see TestListPlansUseIndexes).
func keyset(where []string, args []any, p ports.Page, key string) (string, []any) {
	if !p.After.IsZero() {
		where = append(where, "(created_at, "+key+") < (?, ?)")
		args = append(args, p.After.Nanos(), p.After.Key)
	}
	var q string
	if len(where) > 0 {
		q = " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY created_at DESC, " + key + " DESC LIMIT ?", append(args, limitArg(p.Limit))
}
