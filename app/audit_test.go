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

// TestVerifyStepIsBounded: however long the chain and whatever limit is
// asked, one step reads at most MaxVerifyRecords records and says where
// the next one continues.
func TestVerifyStepIsBounded(t *testing.T) {
	ctrl := gomock.NewController(t)
	store := mocks.NewMockAuditStore(ctrl)
	var hashes []string // hashes[i] is record i+1's
	hashOf := func(seq int64) string {
		if seq == 0 {
			return domain.GenesisHash
		}
		return hashes[seq-1]
	}
	store.EXPECT().AuditChain(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, after int64, limit int) ([]domain.AuditRecord, error) {
			if limit > 1000 {
				t.Errorf("one read asked for %d records", limit)
			}
			out := make([]domain.AuditRecord, limit) // an endless chain
			for i := range out {
				seq := after + int64(i) + 1
				r := domain.AuditRecord{Subject: "s", Decision: domain.AuditAllow}
				r.Seal(seq, hashOf(seq-1))
				if int(seq) > len(hashes) {
					hashes = append(hashes, r.Hash)
				}
				out[i] = r
			}
			return out, nil
		})
	a := app.NewAudit(store)
	for _, limit := range []int{0, 5, app.MaxVerifyRecords + 1, 1 << 30} {
		step, err := a.VerifyStep(context.Background(), app.VerifyRequest{HasFrom: true, Limit: limit})
		want := int64(app.MaxVerifyRecords)
		if limit == 5 {
			want = 5
		}
		if err != nil || !step.OK() || step.Checked != want || step.Next != want {
			t.Errorf("limit %d: checked %d, next %d, ok %v, %v; want %d checked and next %d", limit, step.Checked, step.Next, step.OK(), err, want, want)
		}
	}
	// The next step continues at Next without checking that record again.
	step, err := a.VerifyStep(context.Background(), app.VerifyRequest{From: 5, HasFrom: true, Limit: 5})
	if err != nil || !step.OK() || step.Checked != 5 || step.Next != 10 {
		t.Errorf("from 5: checked %d, next %d, %+v, %v; want 5 checked (6..10), next 10", step.Checked, step.Next, step.Breaks, err)
	}
}
