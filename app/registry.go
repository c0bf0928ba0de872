package app

import (
	"context"
	"errors"
	"sync"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Registry is what a tool-call decision reads besides the session and its
// agent: the settings (the security gateway), the registered servers and
// tools, and the policy version. Every use case reads and writes them
// through it. After KeepInMemory it answers the reads from memory once the
// store has answered them, so that a decision reads none of them from the
// store.
//
// It is correct only while it hears of every change, as sessionLists is:
// this instance forgets everything once it has written any of them, before
// the write is answered; every other instance forgets on the store
// watcher's report and acknowledges it, and the write is answered once
// every listener has (see changedEverywhere); while the watcher is not live
// nothing is served from memory. A change forgets everything: these writes
// are rare and each read is one row.
type Registry struct {
	settings ports.SettingsStore
	catalog  ports.CatalogStore
	policies ports.PolicyStore
	// mem is nil until KeepInMemory: every read goes to the store.
	mem   *registryMemory
	watch ports.LoginSessionWatcher
}

var (
	_ ports.SettingsStore = (*Registry)(nil)
	_ ports.CatalogStore  = (*Registry)(nil)
	_ ports.PolicyStore   = (*Registry)(nil)
)

// NewRegistry reads and writes through the stores given.
func NewRegistry(settings ports.SettingsStore, catalog ports.CatalogStore, policies ports.PolicyStore) *Registry {
	return &Registry{settings: settings, catalog: catalog, policies: policies}
}

// KeepInMemory makes the reads served from memory after their first, with
// watch reporting what every instance changes. Call it before serving; it
// returns the function that stops watching.
func (r *Registry) KeepInMemory(watch ports.LoginSessionWatcher) (stop func()) {
	m := &registryMemory{entries: map[string]registryEntry{}}
	r.mem, r.watch = m, watch
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch.WatchLoginSessions(ctx, m.heard, m.setLive)
	}()
	return func() { cancel(); <-done }
}

// registryMemory keeps the store's answers by what was asked: "settings",
// "version", "tools" (the whole list) or "server:"/"tool:" and a name.
// A name not registered is kept too (domain.ErrNotFound), so that calls of
// unregistered tools read nothing either.
type registryMemory struct {
	mu   sync.Mutex
	live bool
	// epoch moves with every forget, so that an answer read before a
	// change is not kept after it.
	epoch   uint64
	entries map[string]registryEntry
	acks    acks
}

type registryEntry struct {
	v   any
	err error
}

// maxRegistryEntries bounds what is kept: names asked for are the callers'
// (any tool name an agent calls), so past it they are read from the store
// until the next change forgets them all.
const maxRegistryEntries = 4096

func (m *registryMemory) get(key string) (registryEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live {
		return registryEntry{}, false
	}
	e, ok := m.entries[key]
	return e, ok
}

func (m *registryMemory) since() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

func (m *registryMemory) remember(epoch uint64, key string, e registryEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live || m.epoch != epoch || len(m.entries) >= maxRegistryEntries {
		return
	}
	m.entries[key] = e
}

// heard forgets everything on a registry change reported by the watcher,
// and counts the acknowledgements of the changes this instance waits for.
func (m *registryMemory) heard(report string) {
	if m.acks.heard(report) || !ports.IsRegistryReport(report) {
		return
	}
	m.forget()
}

func (m *registryMemory) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	clear(m.entries)
}

func (m *registryMemory) isLive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// setLive forgets everything: changes made while the watcher was away are
// unknown.
func (m *registryMemory) setLive(live bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	m.live = live
	clear(m.entries)
}

// kept answers key from memory, else from read, and keeps what read
// answered (a value, or domain.ErrNotFound) unless a change was made
// meanwhile. Values kept are shared by every caller: none changes them.
func kept[T any](m *registryMemory, key string, read func() (T, error)) (T, error) {
	if m == nil {
		return read()
	}
	if e, ok := m.get(key); ok {
		v, _ := e.v.(T)
		return v, e.err
	}
	epoch := m.since()
	v, err := read()
	if err == nil || errors.Is(err, domain.ErrNotFound) {
		m.remember(epoch, key, registryEntry{v: v, err: err})
	}
	return v, err
}

// change makes the write that the store reports as
// ports.RegistryChangeKey(what), answered once every instance has
// forgotten what it kept.
func (r *Registry) change(ctx context.Context, what string, write func() error) error {
	if r.mem == nil {
		return write()
	}
	return changedEverywhere(ctx, r.watch, &r.mem.acks, r.mem.isLive(), r.mem.forget, ports.RegistryChangeKey(what), write)
}

// GetSettings returns the settings in force.
func (r *Registry) GetSettings(ctx context.Context) (domain.Settings, error) {
	return kept(r.mem, ports.RegistrySettings, func() (domain.Settings, error) { return r.settings.GetSettings(ctx) })
}

// PutSettings replaces the settings.
func (r *Registry) PutSettings(ctx context.Context, s domain.Settings) error {
	return r.change(ctx, ports.RegistrySettings, func() error { return r.settings.PutSettings(ctx, s) })
}

// CreateServer registers a server.
func (r *Registry) CreateServer(ctx context.Context, s domain.Server) error {
	return r.change(ctx, ports.RegistryServer+s.Name, func() error { return r.catalog.CreateServer(ctx, s) })
}

// ListServers reads a page of servers from the store.
func (r *Registry) ListServers(ctx context.Context, page ports.Page) ([]domain.Server, error) {
	return r.catalog.ListServers(ctx, page)
}

// GetServer returns the server registered as name.
func (r *Registry) GetServer(ctx context.Context, name string) (domain.Server, error) {
	return kept(r.mem, ports.RegistryServer+name, func() (domain.Server, error) { return r.catalog.GetServer(ctx, name) })
}

// CreateTool registers a tool.
func (r *Registry) CreateTool(ctx context.Context, t domain.Tool) error {
	return r.change(ctx, ports.RegistryTool+t.Name, func() error { return r.catalog.CreateTool(ctx, t) })
}

// GetTool returns the tool registered as name.
func (r *Registry) GetTool(ctx context.Context, name string) (domain.Tool, error) {
	return kept(r.mem, ports.RegistryTool+name, func() (domain.Tool, error) { return r.catalog.GetTool(ctx, name) })
}

// ListTools returns a page of tools; the whole list (the zero page, which
// the gateway's tools/list and imports read) from memory.
func (r *Registry) ListTools(ctx context.Context, page ports.Page) ([]domain.Tool, error) {
	if page != (ports.Page{}) {
		return r.catalog.ListTools(ctx, page)
	}
	return kept(r.mem, "tools", func() ([]domain.Tool, error) { return r.catalog.ListTools(ctx, page) })
}

// CreatePolicy stores a rule.
func (r *Registry) CreatePolicy(ctx context.Context, p domain.PolicyRule) error {
	return r.change(ctx, ports.RegistryPolicy+p.ID, func() error { return r.policies.CreatePolicy(ctx, p) })
}

// ListPolicies reads a page of rules from the store.
func (r *Registry) ListPolicies(ctx context.Context, page ports.Page) ([]domain.PolicyRule, error) {
	return r.policies.ListPolicies(ctx, page)
}

// DeletePolicy removes a rule.
func (r *Registry) DeletePolicy(ctx context.Context, id string) error {
	return r.change(ctx, ports.RegistryPolicy+id, func() error { return r.policies.DeletePolicy(ctx, id) })
}

// PolicyVersion returns the rules' version, which tells PolicyRules
// whether its compiled copy is current.
func (r *Registry) PolicyVersion(ctx context.Context) (int64, error) {
	return kept(r.mem, "version", func() (int64, error) { return r.policies.PolicyVersion(ctx) })
}
