package app

import (
	"context"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Registry is what a tool-call decision reads besides the session and its
// agent: the settings (the security gateway), the registered servers and
// tools, and the policy version. Every use case reads and writes them
// through it. After KeepInMemory it answers the reads from memory once the
// store has answered them (see memory), so that a decision reads none of
// them from the store.
type Registry struct {
	settings ports.SettingsStore
	catalog  ports.CatalogStore
	policies ports.PolicyStore
	// mem is nil until KeepInMemory: every read goes to the store.
	mem *memory
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

// maxRegistryEntries bounds what is kept: names asked for are the callers'
// (any tool name an agent calls).
const maxRegistryEntries = 4096

// KeepInMemory makes the reads served from memory after their first, with
// watch reporting what every instance changes. Call it before serving; it
// returns the function that stops watching. What is kept is asked by
// "settings", "version", "tools" (the whole list) or "server:"/"tool:" and
// a name; a name not registered is kept too, so that calls of unregistered
// tools read nothing either.
func (r *Registry) KeepInMemory(watch ports.LoginSessionWatcher) (stop func()) {
	r.mem = newMemory(ports.IsRegistryReport, maxRegistryEntries)
	return r.mem.keepWatching(watch)
}

// change makes the write that the store reports as
// ports.RegistryChangeKey(what).
func (r *Registry) change(ctx context.Context, what string, write func() error) error {
	return r.mem.change(ctx, ports.RegistryChangeKey(what), write)
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

// UpdateServer changes a server's registration.
func (r *Registry) UpdateServer(ctx context.Context, s domain.Server) error {
	return r.change(ctx, ports.RegistryServer+s.Name, func() error { return r.catalog.UpdateServer(ctx, s) })
}

// DeleteServer removes a server.
func (r *Registry) DeleteServer(ctx context.Context, name string) error {
	return r.change(ctx, ports.RegistryServer+name, func() error { return r.catalog.DeleteServer(ctx, name) })
}

// UpdateTool changes a tool's registration.
func (r *Registry) UpdateTool(ctx context.Context, t domain.Tool) error {
	return r.change(ctx, ports.RegistryTool+t.Name, func() error { return r.catalog.UpdateTool(ctx, t) })
}

// PinTool pins a tool's definition.
func (r *Registry) PinTool(ctx context.Context, name string, def string, digest string) error {
	return r.change(ctx, ports.RegistryTool+name, func() error { return r.catalog.PinTool(ctx, name, def, digest) })
}

// RecordToolDrift records a tool's changed definition.
func (r *Registry) RecordToolDrift(ctx context.Context, name string, def string, digest string, at time.Time) error {
	return r.change(ctx, ports.RegistryTool+name, func() error { return r.catalog.RecordToolDrift(ctx, name, def, digest, at) })
}

// AcceptToolDefinition pins a tool's changed definition.
func (r *Registry) AcceptToolDefinition(ctx context.Context, name, digest string) error {
	return r.change(ctx, ports.RegistryTool+name, func() error { return r.catalog.AcceptToolDefinition(ctx, name, digest) })
}

// DeleteTool removes a tool.
func (r *Registry) DeleteTool(ctx context.Context, name string) error {
	return r.change(ctx, ports.RegistryTool+name, func() error { return r.catalog.DeleteTool(ctx, name) })
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
