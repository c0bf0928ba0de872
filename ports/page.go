package ports

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// Page asks a store for one page of a list ordered newest first (creation
// time, then key, both descending): at most Limit items (0: every one, for
// the readers inside the process that need the whole set), only those
// strictly after the position After. A keyset, not an offset: a row
// inserted while a client pages is never served twice nor makes another
// row skipped, and a page costs an index range scan of Limit rows however
// long the table is.
type Page struct {
	Limit int
	After Cursor
}

// Cursor is a position in a list ordered newest first: the creation time
// and key (the ID, or the name where names are the key) of the last item
// of the previous page. The zero Cursor is the start of the list.
type Cursor struct {
	Created time.Time
	Key     string
}

// CursorOf is the position just after an item created at created with key.
func CursorOf(created time.Time, key string) Cursor { return Cursor{Created: created, Key: key} }

// IsZero reports whether c is the start of the list.
func (c Cursor) IsZero() bool { return c.Key == "" }

// Nanos is the creation time as both stores keep it (Unix nanoseconds).
func (c Cursor) Nanos() int64 { return c.Created.UnixNano() }

// String encodes c as the opaque token clients send back as ?cursor=:
// base64url (no padding) of "<unix nanoseconds>.<key>". The empty string is
// the zero Cursor.
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Nanos(), 10) + "." + c.Key))
}

// ParseCursor decodes a token of Cursor.String; "" is the zero Cursor.
// Anything else fails with domain.ErrInvalidInput.
func ParseCursor(token string) (Cursor, error) {
	if token == "" {
		return Cursor{}, nil
	}
	bad := fmt.Errorf("query parameter cursor=%.40q: not a cursor of this list (send back next_cursor of the previous answer): %w",
		token, domain.ErrInvalidInput)
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Cursor{}, bad
	}
	nanos, key, ok := strings.Cut(string(raw), ".")
	if !ok || key == "" {
		return Cursor{}, bad
	}
	n, err := strconv.ParseInt(nanos, 10, 64)
	if err != nil || n < 0 {
		return Cursor{}, bad
	}
	return Cursor{Created: time.Unix(0, n).UTC(), Key: key}, nil
}
