package app_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// registryFixture is a Registry kept in memory over mock stores and a mock
// watcher, live from the start; reads counts the store's reads by kind.
type registryFixture struct {
	reg      *app.Registry
	settings *mocks.MockSettingsStore
	catalog  *mocks.MockCatalogStore
	policies *mocks.MockPolicyStore
	w        *watcherHandle
	reads    map[string]int
}

// registryReads are the reads a decision makes, by kind.
var registryReads = []struct {
	kind string
	read func(context.Context, *app.Registry) error
}{
	{"settings", func(ctx context.Context, r *app.Registry) error { _, err := r.GetSettings(ctx); return err }},
	{"server", func(ctx context.Context, r *app.Registry) error { _, err := r.GetServer(ctx, "files"); return err }},
	{"tool", func(ctx context.Context, r *app.Registry) error { _, err := r.GetTool(ctx, "files.read"); return err }},
	{"unregistered tool", func(ctx context.Context, r *app.Registry) error {
		if _, err := r.GetTool(ctx, "other.tool"); !errors.Is(err, domain.ErrNotFound) {
			return errors.New("want domain.ErrNotFound")
		}
		return nil
	}},
	{"tools", func(ctx context.Context, r *app.Registry) error { _, err := r.ListTools(ctx, ports.Page{}); return err }},
	{"version", func(ctx context.Context, r *app.Registry) error { _, err := r.PolicyVersion(ctx); return err }},
}

func newRegistryFixture(t *testing.T, listeners []string) *registryFixture {
	t.Helper()
	ctrl := gomock.NewController(t)
	f := &registryFixture{settings: mocks.NewMockSettingsStore(ctrl), catalog: mocks.NewMockCatalogStore(ctrl),
		policies: mocks.NewMockPolicyStore(ctrl), reads: map[string]int{}}
	f.reg = app.NewRegistry(f.settings, f.catalog, f.policies)
	count := func(kind string) { f.reads[kind]++ }
	tool := domain.Tool{Name: "files.read", Server: "files"}
	f.settings.EXPECT().GetSettings(gomock.Any()).DoAndReturn(func(context.Context) (domain.Settings, error) {
		count("settings")
		return domain.Settings{SecurityGateway: true, DefaultSessionMode: domain.ModeAsk}, nil
	}).AnyTimes()
	f.catalog.EXPECT().GetServer(gomock.Any(), "files").DoAndReturn(func(context.Context, string) (domain.Server, error) {
		count("server")
		return domain.Server{Name: "files", URL: "https://files.example"}, nil
	}).AnyTimes()
	f.catalog.EXPECT().GetTool(gomock.Any(), "files.read").DoAndReturn(func(context.Context, string) (domain.Tool, error) {
		count("tool")
		return tool, nil
	}).AnyTimes()
	f.catalog.EXPECT().GetTool(gomock.Any(), "other.tool").DoAndReturn(func(context.Context, string) (domain.Tool, error) {
		count("unregistered tool")
		return domain.Tool{}, domain.ErrNotFound
	}).AnyTimes()
	f.catalog.EXPECT().ListTools(gomock.Any(), ports.Page{}).DoAndReturn(func(context.Context, ports.Page) ([]domain.Tool, error) {
		count("tools")
		return []domain.Tool{tool}, nil
	}).AnyTimes()
	f.policies.EXPECT().PolicyVersion(gomock.Any()).DoAndReturn(func(context.Context) (int64, error) {
		count("version")
		return 7, nil
	}).AnyTimes()
	f.w = watchedBy(t, listeners, true, f.reg.KeepInMemory)
	return f
}

func (f *registryFixture) readAll(t *testing.T) {
	t.Helper()
	for _, r := range registryReads {
		if err := r.read(t.Context(), f.reg); err != nil {
			t.Fatalf("read %s: %v", r.kind, err)
		}
	}
}

// TestRegistryInMemory: what a decision reads of the registry is read from
// the store once and then from memory, until any of it is written here
// (whether or not the store took the write) or reported changed by the
// watcher, or the watcher is not live.
func TestRegistryInMemory(t *testing.T) {
	tests := []struct {
		name    string
		between func(t *testing.T, f *registryFixture)
		// wantReads is each kind's store reads after two rounds.
		wantReads int
	}{
		{"second read from memory", func(*testing.T, *registryFixture) {}, 1},
		{"settings written here: forgotten", func(t *testing.T, f *registryFixture) {
			f.settings.EXPECT().PutSettings(gomock.Any(), gomock.Any()).Return(nil)
			if err := f.reg.PutSettings(t.Context(), domain.DefaultSettings()); err != nil {
				t.Fatalf("PutSettings: %v", err)
			}
		}, 2},
		{"server registered here: forgotten", func(t *testing.T, f *registryFixture) {
			f.catalog.EXPECT().CreateServer(gomock.Any(), gomock.Any()).Return(nil)
			if err := f.reg.CreateServer(t.Context(), domain.Server{Name: "mail"}); err != nil {
				t.Fatalf("CreateServer: %v", err)
			}
		}, 2},
		{"tool registered here: forgotten", func(t *testing.T, f *registryFixture) {
			f.catalog.EXPECT().CreateTool(gomock.Any(), gomock.Any()).Return(nil)
			if err := f.reg.CreateTool(t.Context(), domain.Tool{Name: "other.tool", Server: "files"}); err != nil {
				t.Fatalf("CreateTool: %v", err)
			}
		}, 2},
		{"policy created here: forgotten", func(t *testing.T, f *registryFixture) {
			f.policies.EXPECT().CreatePolicy(gomock.Any(), gomock.Any()).Return(nil)
			if err := f.reg.CreatePolicy(t.Context(), domain.PolicyRule{ID: "pol_1"}); err != nil {
				t.Fatalf("CreatePolicy: %v", err)
			}
		}, 2},
		{"policy deleted here: forgotten", func(t *testing.T, f *registryFixture) {
			f.policies.EXPECT().DeletePolicy(gomock.Any(), "pol_1").Return(nil)
			if err := f.reg.DeletePolicy(t.Context(), "pol_1"); err != nil {
				t.Fatalf("DeletePolicy: %v", err)
			}
		}, 2},
		{"a refused write: forgotten all the same", func(t *testing.T, f *registryFixture) {
			f.catalog.EXPECT().CreateTool(gomock.Any(), gomock.Any()).Return(domain.ErrConflict)
			if err := f.reg.CreateTool(t.Context(), domain.Tool{Name: "files.read", Server: "files"}); err == nil {
				t.Fatal("CreateTool: got nil, want the store's error")
			}
		}, 2},
		{"settings changed on another instance: forgotten", func(_ *testing.T, f *registryFixture) {
			f.w.changed(ports.RegistryChangeKey(ports.RegistrySettings))
		}, 2},
		{"a tool registered on another instance: forgotten", func(_ *testing.T, f *registryFixture) {
			f.w.changed(ports.RegistryChangeKey(ports.RegistryTool + "mail.send"))
		}, 2},
		{"a policy changed on another instance: forgotten", func(_ *testing.T, f *registryFixture) {
			f.w.changed(ports.RegistryChangeKey(ports.RegistryPolicy + "pol_9"))
		}, 2},
		{"a session changed on another instance: kept", func(_ *testing.T, f *registryFixture) {
			f.w.changed(ports.SessionChangeKey("s1"))
		}, 1},
		{"an acknowledgement: kept", func(_ *testing.T, f *registryFixture) {
			f.w.changed(ports.Ack(testListener, ports.RegistryChangeKey(ports.RegistrySettings)))
		}, 1},
		{"watcher lost its connection: from the store", func(_ *testing.T, f *registryFixture) {
			f.w.live(false)
		}, 2},
		{"watcher live again: read once more", func(_ *testing.T, f *registryFixture) {
			f.w.live(false)
			f.w.live(true)
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRegistryFixture(t, nil)
			f.readAll(t)
			tt.between(t, f)
			f.readAll(t)
			for _, r := range registryReads {
				if got := f.reads[r.kind]; got != tt.wantReads {
					t.Errorf("store reads of %s: got %d, want %d", r.kind, got, tt.wantReads)
				}
			}
		})
	}
}

// TestRegistryNotServedWhileDown: while the watcher is not live every read
// goes to the store.
func TestRegistryNotServedWhileDown(t *testing.T) {
	f := newRegistryFixture(t, nil)
	f.w.live(false)
	for range 3 {
		f.readAll(t)
	}
	for _, r := range registryReads {
		if got := f.reads[r.kind]; got != 3 {
			t.Errorf("store reads of %s: got %d, want 3", r.kind, got)
		}
	}
}

// TestRegistryKeepsNoFailure: a read the store failed (other than not
// found) is not kept: the next read asks the store again.
func TestRegistryKeepsNoFailure(t *testing.T) {
	ctrl := gomock.NewController(t)
	settings := mocks.NewMockSettingsStore(ctrl)
	failed := errors.New("database gone")
	gomock.InOrder(
		settings.EXPECT().GetSettings(gomock.Any()).Return(domain.Settings{}, failed),
		settings.EXPECT().GetSettings(gomock.Any()).Return(domain.DefaultSettings(), nil),
	)
	reg := app.NewRegistry(settings, mocks.NewMockCatalogStore(ctrl), mocks.NewMockPolicyStore(ctrl))
	w := mocks.NewMockLoginSessionWatcher(ctrl)
	ready := make(chan struct{})
	w.EXPECT().WatchLoginSessions(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, _ func(string), live func(bool)) { live(true); close(ready); <-ctx.Done() })
	t.Cleanup(reg.KeepInMemory(w))
	<-ready
	if _, err := reg.GetSettings(t.Context()); !errors.Is(err, failed) {
		t.Fatalf("first GetSettings: got %v, want the store's error", err)
	}
	got, err := reg.GetSettings(t.Context())
	if err != nil || got != domain.DefaultSettings() {
		t.Fatalf("second GetSettings: got %+v, %v; want the defaults from the store", got, err)
	}
}

// TestRegistryWriteWaitsForListeners: a registry write (the gateway turned
// on) is answered only once every listener has acknowledged the store's
// report of it, so that every instance has forgotten the settings before
// the writer hears the answer.
func TestRegistryWriteWaitsForListeners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newRegistryFixture(t, []string{testListener})
		f.settings.EXPECT().PutSettings(gomock.Any(), gomock.Any()).Return(nil)
		done := make(chan error, 1)
		go func() {
			done <- f.reg.PutSettings(context.Background(), domain.Settings{SecurityGateway: true, DefaultSessionMode: domain.ModeAsk})
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("PutSettings answered (%v) before the listener acknowledged", err)
		default:
		}
		report := ports.RegistryChangeKey(ports.RegistrySettings)
		f.w.changed(report)
		f.w.changed(ports.Ack(testListener, report))
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("PutSettings: %v", err)
			}
		default:
			t.Fatal("PutSettings not answered after the listener acknowledged")
		}
	})
}
