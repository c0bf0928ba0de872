package postgres

import (
	"strconv"
	"strings"

	"github.com/agentauth/agentauth/ports"
)

// keyset renders one page of a list ordered newest first: the WHERE clause
// (where, ANDed, plus the rows strictly after p.After in the order
// created_at DESC, key DESC) and the ORDER BY and LIMIT, with their
// arguments appended to args (placeholders numbered after them). Keys
// compare byte-wise (COLLATE "C", as SQLite compares them), so both stores
// order ties on created_at alike; each list has an index on
// (..., created_at, key COLLATE "C"), so a page is a range scan of at most
// p.Limit rows (see TestListPlansUseIndexes).
func keyset(where []string, args []any, p ports.Page, key string) (string, []any) {
	key += ` COLLATE "C"`
	if !p.After.IsZero() {
		args = append(args, p.After.Nanos(), p.After.Key)
		where = append(where, "(created_at, "+key+") < ($"+strconv.Itoa(len(args)-1)+", $"+strconv.Itoa(len(args))+")")
	}
	var q string
	if len(where) > 0 {
		q = " WHERE " + strings.Join(where, " AND ")
	}
	var limit *int // NULL: no limit
	if p.Limit > 0 {
		limit = &p.Limit
	}
	args = append(args, limit)
	return q + " ORDER BY created_at DESC, " + key + " DESC LIMIT $" + strconv.Itoa(len(args)), args
}
