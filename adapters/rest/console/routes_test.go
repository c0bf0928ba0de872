package console

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
)

func TestFormTime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"2026-01-02T15:04", time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC), false}, // a browser's datetime-local, taken as UTC
		{"2026-01-02T15:04:05", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), false},
		{"2026-01-02T15:04:05+02:00", time.Date(2026, 1, 2, 13, 4, 5, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := formTime("since", tt.in)
		if !got.Equal(tt.want) || (err != nil) != tt.wantErr || err != nil && !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("formTime(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestMembersAndLists(t *testing.T) {
	got := members("lead: carol, bob\nalice\r\n\n")
	want := []domain.Member{{Subject: "carol", Lead: true}, {Subject: "bob"}, {Subject: "alice"}}
	if !slices.Equal(got, want) {
		t.Errorf("members: got %v, want %v", got, want)
	}
	if got := list(" a, b c\n"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("list: got %v", got)
	}
	if got := list(" "); got != nil {
		t.Errorf("list of nothing: got %v, want nil (all the parent has)", got)
	}
}
