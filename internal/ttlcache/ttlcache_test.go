package ttlcache

import (
	"fmt"
	"testing"
	"time"
)

func newCache(t *testing.T, size int) *Cache[int, string] {
	t.Helper()
	c, err := New[int, string](size)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExpiry(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ttl := 30 * time.Second
	tests := []struct {
		name   string
		at     time.Time
		wantOK bool
	}{
		{"just stored", t0, true},
		{"one nanosecond before expiry", t0.Add(ttl - 1), true},
		{"at expiry", t0.Add(ttl), false},
		{"long after", t0.Add(time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, 4)
			c.Put(1, "alice", t0.Add(ttl))
			v, ok := c.Get(1, tt.at)
			if ok != tt.wantOK {
				t.Fatalf("Get: got ok=%v, want %v", ok, tt.wantOK)
			}
			if ok && v != "alice" {
				t.Errorf("value: got %q, want %q", v, "alice")
			}
			if !ok && c.Len() != 0 {
				t.Errorf("expired entry kept: got len %d, want 0", c.Len())
			}
		})
	}
}

func TestNeverGrowsPastItsBound(t *testing.T) {
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	now := far.Add(-time.Hour)
	for _, size := range []int{1, 2, 7, 64} {
		t.Run(fmt.Sprint("size=", size), func(t *testing.T) {
			c := newCache(t, size)
			for i := range 10 * size {
				c.Put(i, fmt.Sprint(i), far)
				if got := c.Len(); got > size {
					t.Fatalf("after %d puts: got len %d, want at most %d", i+1, got, size)
				}
			}
			if _, ok := c.Get(10*size-1, now); !ok {
				t.Errorf("newest entry: got evicted, want kept")
			}
			if _, ok := c.Get(0, now); ok {
				t.Errorf("oldest entry: got kept, want evicted")
			}
		})
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	now := far.Add(-time.Hour)
	c := newCache(t, 3)
	for i := range 3 {
		c.Put(i, fmt.Sprint(i), far)
	}
	c.Get(0, now)      // 0 is now the most recently used; 1 the least
	c.Put(3, "3", far) // evicts 1
	for i, want := range []bool{true, false, true, true} {
		if _, got := c.Get(i, now); got != want {
			t.Errorf("entry %d present: got %v, want %v", i, got, want)
		}
	}
}

func TestPutReplaces(t *testing.T) {
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCache(t, 2)
	c.Put(1, "old", far)
	c.Put(1, "new", far)
	if v, ok := c.Get(1, far.Add(-time.Second)); !ok || v != "new" {
		t.Errorf("got %q ok=%v, want %q ok=true", v, ok, "new")
	}
	if got := c.Len(); got != 1 {
		t.Errorf("len: got %d, want 1", got)
	}
}

func TestNewRefusesNoSize(t *testing.T) {
	for _, size := range []int{0, -1} {
		if _, err := New[int, int](size); err == nil {
			t.Errorf("New(%d): got no error", size)
		}
	}
}
