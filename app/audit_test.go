package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

func records(seqs ...int64) []domain.AuditRecord {
	out := make([]domain.AuditRecord, len(seqs))
	for i, s := range seqs {
		out[i] = domain.AuditRecord{Seq: s}
	}
	return out
}

func TestAuditQueryPages(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		wantAsk   int // limit passed to the store: one more than the page
		stored    []domain.AuditRecord
		wantSeqs  int
		wantNext  int64
		storeFail bool
	}{
		{"default page size", 0, app.DefaultPageSize + 1, records(9, 8), 2, 0, false},
		{"a further page exists", 2, 3, records(9, 8, 7), 2, 8, false},
		{"exactly one page", 3, 4, records(9, 8, 7), 3, 0, false},
		{"clamped to the maximum", 10_000, app.MaxPageSize + 1, records(5), 1, 0, false},
		{"negative is the default", -4, app.DefaultPageSize + 1, nil, 0, 0, false},
		{"store failure", 1, 2, nil, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := mocks.NewMockAuditStore(gomock.NewController(t))
			var err error
			if tt.storeFail {
				err = errors.New("disk gone")
			}
			store.EXPECT().QueryAudit(gomock.Any(), ports.AuditQuery{Subject: "s", Limit: tt.wantAsk}).Return(tt.stored, err)
			page, gotErr := app.NewAudit(store).Query(context.Background(), ports.AuditQuery{Subject: "s", Limit: tt.limit})
			if tt.storeFail {
				if gotErr == nil {
					t.Fatal("want the store's error")
				}
				return
			}
			if len(page.Records) != tt.wantSeqs || page.Next != tt.wantNext {
				t.Errorf("got %d records, next %d; want %d, next %d", len(page.Records), page.Next, tt.wantSeqs, tt.wantNext)
			}
		})
	}
}

func TestSettingsPutValidates(t *testing.T) {
	store := mocks.NewMockSettingsStore(gomock.NewController(t))
	good := domain.Settings{SecurityGateway: true, DefaultSessionMode: domain.ModeAuto}
	store.EXPECT().PutSettings(gomock.Any(), good).Return(nil)
	store.EXPECT().GetSettings(gomock.Any()).Return(good, nil)
	s := app.NewSettings(store)
	if err := s.Put(context.Background(), good); err != nil {
		t.Fatalf("Put(valid) = %v", err)
	}
	if err := s.Put(context.Background(), domain.Settings{DefaultSessionMode: "sometimes"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("Put(invalid mode) = %v, want ErrInvalidInput and no store call", err)
	}
	if got, err := s.Get(context.Background()); err != nil || got != good {
		t.Errorf("Get() = %+v, %v; want %+v", got, err, good)
	}
}
