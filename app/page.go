package app

import (
	"slices"

	"github.com/agentauth/agentauth/ports"
)

// Page limits of every list, the audit log's included.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// pageLimit clamps a requested page size to [1, MaxPageSize]; 0 (none
// asked) is DefaultPageSize.
func pageLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// PageRequest is the page a caller asks of a list: at most Limit items
// (see pageLimit), those after Cursor, the next_cursor of the previous
// answer ("" for the first page).
type PageRequest struct {
	Limit  int
	Cursor string
}

// Page is one page of a list, newest first, and the cursor of the page
// after it ("" when this one is the last).
type Page[T any] struct {
	Items []T
	Next  string
}

// store turns the request into the store's page: one item more than the
// caller gets, which tells whether there is a next page. A cursor that is
// not one fails with domain.ErrInvalidInput.
func (r PageRequest) store() (ports.Page, error) {
	after, err := ports.ParseCursor(r.Cursor)
	if err != nil {
		return ports.Page{}, err
	}
	return ports.Page{Limit: pageLimit(r.Limit) + 1, After: after}, nil
}

// pageOf cuts what the store answered for asked (see PageRequest.store)
// to the caller's page, with the cursor after its last item when the store
// had more. keep, unless nil, then drops the items the caller may not see:
// such a page may hold fewer items than asked, even none, and still have
// a next one; only an empty Next ends the list. Filtering after the cut
// keeps a request's work to one page of the store's index.
func pageOf[T any](items []T, asked ports.Page, at func(T) ports.Cursor, keep func(T) bool) Page[T] {
	out := Page[T]{Items: items}
	if want := asked.Limit - 1; len(items) > want {
		out.Items = items[:want]
		out.Next = at(items[want-1]).String()
	}
	if keep != nil {
		out.Items = slices.DeleteFunc(out.Items, func(it T) bool { return !keep(it) })
	}
	if out.Items == nil {
		out.Items = []T{}
	}
	return out
}
