package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// APIKeysConfig is the managed keys' policy (auth.apiKeys.*).
type APIKeysConfig struct {
	// MaxTTL bounds every key's expiry from its creation.
	MaxTTL time.Duration
	// MaxPerOwner bounds the keys neither revoked nor expired per owner.
	MaxPerOwner int
	// Configured are the roles the configuration gives the subjects it
	// names (auth.keys): read at start, they are those subjects' roles
	// whatever their owner records say, so that a role key moved to
	// another role narrows its keys and agents from the start on.
	Configured map[string][]domain.Role
	// ConfiguredSubjects begins every subject the configuration gives
	// roles to: one it no longer names has none (its key was removed), so
	// nothing derived from it keeps the roles it last had.
	ConfiguredSubjects string
}

// configured returns the roles the configuration gives subject, and
// whether it decides them (a subject of its space that it no longer names
// has none).
func (c APIKeysConfig) configured(subject string) ([]domain.Role, bool) {
	if roles, ok := c.Configured[subject]; ok {
		return roles, true
	}
	return nil, c.ConfiguredSubjects != "" && strings.HasPrefix(subject, c.ConfiguredSubjects)
}

// Bounds of what a key request may name.
const (
	maxKeyName     = 100
	maxKeyNarrow   = 100
	maxServiceName = 63
)

// APIKeys is the use case of managed API keys: people and ADMIN-made
// service accounts make scoped, expiring keys; each use is decided with the
// key's scopes intersected with its owner's roles at that moment.
type APIKeys struct {
	store    ports.APIKeyStore
	projects ports.ProjectStore
	authz    *domain.Authorizer
	clock    ports.Clock
	cfg      APIKeysConfig
	// memory serves keys and owners after their first use; nil: every
	// request reads the store (see KeepInMemory). watch is what keeps it
	// current.
	memory *keyMemory
	watch  ports.LoginSessionWatcher
}

// NewAPIKeys wires the use case; a policy without bounds is an error.
func NewAPIKeys(cfg APIKeysConfig, store ports.APIKeyStore, projects ports.ProjectStore, authz *domain.Authorizer, clock ports.Clock) (*APIKeys, error) {
	if cfg.MaxTTL <= 0 || cfg.MaxPerOwner <= 0 {
		return nil, fmt.Errorf("managed keys: maxTTL and maxPerOwner must be positive: %w", domain.ErrInvalidInput)
	}
	return &APIKeys{store: store, projects: projects, authz: authz, clock: clock, cfg: cfg}, nil
}

// KeepInMemory makes key authentication serve keys from memory after their
// first use, with watch reporting what other instances change. It returns
// the function that stops watching.
func (k *APIKeys) KeepInMemory(watch ports.LoginSessionWatcher) (stop func()) {
	m := newKeyMemory()
	k.memory, k.watch = m, watch
	return untilStopped(func(ctx context.Context) { watch.WatchLoginSessions(ctx, m.heard, m.setLive) })
}

// KeyRequest is what POST /api/v2/keys asks for.
type KeyRequest struct {
	Name        string
	Permissions []domain.Permission
	Projects    []string
	Tools       []string
	ExpiresAt   time.Time
	// ServiceAccount names the service account the key is for; empty: the
	// caller's own key.
	ServiceAccount string
}

// NewKey is a key just made: the stored record and the secret text, which
// is shown once and kept nowhere.
type NewKey struct {
	Key    domain.APIKey
	Secret string
}

var errKeyManagesKeys = domain.RefuseToken(domain.ReasonKeyCannotMakeKeys, domain.ErrForbidden,
	"a managed key cannot make or revoke keys; sign in, or use SERVICE_API_KEY")

// errDebugMakesNoKeys: a key made with a built-in debug key would outlive
// debug mode (same data folder, another mode, another address).
var errDebugMakesNoKeys = domain.RefuseToken(domain.ReasonKeyCannotMakeKeys, domain.ErrForbidden,
	"debug principals make no managed keys: they would outlive debug mode")

// Create makes a key for the caller, or for a service account when an
// ADMIN (keys:manage) names one. Its permissions must be among the owner's
// own; none asked means all of them.
func (k *APIKeys) Create(ctx context.Context, p domain.Principal, req KeyRequest) (NewKey, error) {
	if p.Key != nil {
		return NewKey{}, errKeyManagesKeys
	}
	if p.Method == domain.MethodDebug {
		return NewKey{}, errDebugMakesNoKeys
	}
	if err := checkKeyName(req.Name); err != nil {
		return NewKey{}, err
	}
	projects, err := narrowList("projects", req.Projects)
	if err != nil {
		return NewKey{}, err
	}
	tools, err := narrowList("tools", req.Tools)
	if err != nil {
		return NewKey{}, err
	}
	now := k.clock.Now()
	if err := domain.KeyExpiry(req.ExpiresAt, now, k.cfg.MaxTTL); err != nil {
		return NewKey{}, err
	}
	owner, held := p.Subject, k.authz.PermissionsOf(p.Roles)
	if req.ServiceAccount != "" {
		if d := k.authz.Allow(p, domain.PermKeysManage); !d.Allowed {
			return NewKey{}, &domain.AccessDenied{Decision: d}
		}
		sa, err := k.store.GetKeyOwner(ctx, domain.ServiceAccountSubject(req.ServiceAccount))
		if errors.Is(err, domain.ErrNotFound) || err == nil && !sa.Service {
			return NewKey{}, fmt.Errorf("no service account %q; make it with POST /api/v2/service-accounts: %w", req.ServiceAccount, domain.ErrNotFound)
		}
		if err != nil {
			return NewKey{}, err
		}
		owner, held = sa.Subject, k.authz.PermissionsOf(sa.Roles)
	} else if err := k.record(ctx, p, now); err != nil {
		return NewKey{}, err
	}
	perms, err := domain.NarrowKey(held, req.Permissions)
	if err != nil {
		return NewKey{}, err
	}
	mk := domain.NewManagedKey()
	h := domain.HashManagedKey(mk.Text)
	rec := domain.APIKey{ID: mk.ID, Name: req.Name, Owner: owner, Hash: h[:], Permissions: perms, Projects: projects, Tools: tools,
		CreatedBy: p.Subject, CreatedAt: now, ExpiresAt: req.ExpiresAt}
	if err := k.store.CreateAPIKey(ctx, rec, k.cfg.MaxPerOwner, now); err != nil {
		return NewKey{}, err
	}
	rec.Hash = nil
	return NewKey{Key: rec, Secret: mk.Text}, nil
}

func checkKeyName(name string) error {
	if name == "" || len(name) > maxKeyName || !printable(name) {
		return fmt.Errorf("name is required: 1 to %d printable characters: %w", maxKeyName, domain.ErrInvalidInput)
	}
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// narrowList checks a list of projects or tools a key is limited to.
func narrowList(what string, list []string) ([]string, error) {
	if len(list) > maxKeyNarrow {
		return nil, fmt.Errorf("%s: at most %d: %w", what, maxKeyNarrow, domain.ErrInvalidInput)
	}
	out := []string{}
	for _, s := range list {
		if s == "" || len(s) > 255 || !printable(s) {
			return nil, fmt.Errorf("%s: each one 1 to 255 printable characters: %w", what, domain.ErrInvalidInput)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// List returns the keys the caller may see, never a secret or hash: its
// own; every key with keys:audit or keys:manage; with keys:team also the
// keys of the members of projects it leads and the keys limited to those
// projects.
func (k *APIKeys) List(ctx context.Context, p domain.Principal, req PageRequest) (Page[domain.APIKey], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.APIKey]{}, err
	}
	var (
		owner = p.Subject
		keep  func(domain.APIKey) bool
	)
	switch {
	case k.authz.Allow(p, domain.PermKeysAudit).Allowed || k.authz.Allow(p, domain.PermKeysManage).Allowed:
		owner = ""
	case k.authz.Allow(p, domain.PermKeysTeam).Allowed:
		if keep, err = k.teamKeys(ctx, p); err != nil {
			return Page[domain.APIKey]{}, err
		}
		owner = ""
	}
	list, err := k.store.ListAPIKeys(ctx, owner, page)
	if err != nil {
		return Page[domain.APIKey]{}, err
	}
	for i := range list {
		list[i].Hash = nil
	}
	return pageOf(list, page, func(key domain.APIKey) ports.Cursor { return ports.CursorOf(key.CreatedAt, key.ID) }, keep), nil
}

// teamKeys tells the keys a holder of keys:team sees among all: those of
// the members of the projects it leads and those limited to them.
func (k *APIKeys) teamKeys(ctx context.Context, p domain.Principal) (func(domain.APIKey) bool, error) {
	projects, err := k.projects.ListProjects(ctx, ports.ProjectFilter{Member: p.Subject})
	if err != nil {
		return nil, err
	}
	team := p.Key.NarrowTeam(domain.TeamOf(p.Subject, projects))
	members := map[string]bool{p.Subject: true}
	for _, pr := range projects {
		if team.LeadsProject(pr.ID) {
			for _, m := range pr.Members {
				members[m.Subject] = true
			}
		}
	}
	return func(key domain.APIKey) bool {
		return members[key.Owner] || slices.ContainsFunc(key.Projects, team.LeadsProject)
	}, nil
}

// Revoke revokes a key of the caller's, or any key with keys:manage. It
// returns once every instance has acknowledged it (confirmed), so that the
// key is refused everywhere from the next request on.
func (k *APIKeys) Revoke(ctx context.Context, p domain.Principal, id string) (confirmed bool, err error) {
	if p.Key != nil {
		return false, errKeyManagesKeys
	}
	key, err := k.store.GetAPIKey(ctx, id)
	if err != nil {
		return false, err
	}
	if key.Owner != p.Subject && !k.authz.Allow(p, domain.PermKeysManage).Allowed {
		return false, fmt.Errorf("key %s: %w", id, domain.ErrNotVisible)
	}
	return k.changeEverywhere(ctx, ports.KeyChangeKey(id), func() error { return k.store.RevokeAPIKey(ctx, id, k.clock.Now()) })
}

// changeEverywhere makes a change that instances keeping keys in memory
// must hear of, and returns once every instance listening when it was made
// has acknowledged acting on it. confirmed is false when one did not
// within the wait (it lost its connection to the store's notifications,
// and then serves nothing from memory, or is stuck), or when this
// instance's own watcher is down and cannot hear the acknowledgements.
func (k *APIKeys) changeEverywhere(ctx context.Context, report string, change func() error) (confirmed bool, err error) {
	if k.memory == nil {
		return true, change()
	}
	listeners, err := k.watch.Listeners(ctx)
	if err != nil {
		return false, err
	}
	k.memory.forget(report)
	echo, confirmable := k.memory.acks.expect(report, listeners, k.memory.isLive())
	if err := change(); err != nil {
		return false, err
	}
	return k.memory.acks.await(ctx, report, echo) && confirmable, nil
}

// CreateServiceAccount makes a service account with one role (built-in or
// custom), for an ADMIN: its keys survive whoever made them.
func (k *APIKeys) CreateServiceAccount(ctx context.Context, name string, role domain.Role) (domain.KeyOwner, error) {
	if !validServiceName(name) {
		return domain.KeyOwner{}, fmt.Errorf("name: 1 to %d of a-z, 0-9 and '-', starting with a letter: %w", maxServiceName, domain.ErrInvalidInput)
	}
	if !k.authz.Knows(role) {
		return domain.KeyOwner{}, domain.RefuseToken(domain.ReasonServiceAccountRole, domain.ErrInvalidInput, "role %q is neither built in nor in auth.roles", role)
	}
	o := domain.KeyOwner{Subject: domain.ServiceAccountSubject(name), Name: name, Roles: []domain.Role{role}, Service: true, UpdatedAt: k.clock.Now()}
	if err := k.store.CreateKeyOwner(ctx, o); errors.Is(err, domain.ErrConflict) {
		return domain.KeyOwner{}, domain.RefuseToken(domain.ReasonServiceAccountTaken, domain.ErrConflict, "service account %s exists", name)
	} else if err != nil {
		return domain.KeyOwner{}, err
	}
	return o, nil
}

func validServiceName(name string) bool {
	if name == "" || len(name) > maxServiceName || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ServiceAccounts lists a page of the service accounts, by name (they
// have no creation time).
func (k *APIKeys) ServiceAccounts(ctx context.Context, req PageRequest) (Page[domain.KeyOwner], error) {
	page, err := req.store()
	if err != nil {
		return Page[domain.KeyOwner]{}, err
	}
	list, err := k.store.ListKeyOwners(ctx, true, page)
	if err != nil {
		return Page[domain.KeyOwner]{}, err
	}
	return pageOf(list, page, func(o domain.KeyOwner) ports.Cursor { return ports.CursorOf(time.Unix(0, 0).UTC(), o.Subject) }, nil), nil
}

// SetOwnerDisabled suspends (or, for a service account, restores) the keys
// of subject: for an ADMIN disabling a user, and for a back-channel logout
// naming the subject. A person's keys come back when it next signs in. It
// returns once every instance has acknowledged it (confirmed). A subject
// that never made a key has nothing to suspend.
func (k *APIKeys) SetOwnerDisabled(ctx context.Context, subject string, disabled bool) (confirmed bool, err error) {
	o, err := k.store.GetKeyOwner(ctx, subject)
	if errors.Is(err, domain.ErrNotFound) && disabled {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if o.Disabled == disabled {
		return true, nil
	}
	o.Disabled, o.UpdatedAt = disabled, k.clock.Now()
	return k.changeEverywhere(ctx, ports.OwnerChangeKey(subject), func() error { return k.store.PutKeyOwner(ctx, o) })
}

// Observe records the roles of a person who authenticated with anything but
// a managed key, when it owns keys and they changed (or its keys were
// suspended): its keys narrow, widen back or return from then on. The
// name its credential gives is kept with them (a label). From memory this
// costs a map lookup; the store is written only on a change, which it
// reports (changed) for the request's audit record when roles or the
// suspension changed.
func (k *APIKeys) Observe(ctx context.Context, p domain.Principal) (changed bool, err error) {
	if p.Key != nil || p.Subject == "" {
		return false, nil
	}
	o, err := k.ownerOf(ctx, p.Subject)
	if err != nil || o == nil || o.Service {
		return false, err
	}
	changed = o.Disabled || !slices.Equal(o.Roles, p.Roles)
	if !changed && !renamed(o, p) {
		return false, nil
	}
	return changed, k.record(ctx, p, k.clock.Now())
}

// renamed reports whether p's credential names the person otherwise than
// its owner record o: a credential that names nobody erases no name.
func renamed(o *domain.KeyOwner, p domain.Principal) bool { return p.Name != "" && p.Name != o.Name }

// Remember records the roles of a person who made something that derives
// from it (a session, an agent token), so that Observe keeps them current
// and its agents are decided with them (OwnerNow), and of a person who
// resolved a tool call, so that its name is known beside its subject
// (PersonNames). A managed key's caller has its record already; k nil
// (hybrid mode) records nothing.
func (k *APIKeys) Remember(ctx context.Context, p domain.Principal) error {
	if k == nil || p.Key != nil || p.Subject == "" {
		return nil
	}
	return k.record(ctx, p, k.clock.Now())
}

// OwnerNow returns the roles subject holds now as agentauth knows them:
// those the configuration gives it, else those it last authenticated with
// (its owner record; none while its keys are suspended). known is false
// when there is neither (or k is nil, in hybrid mode).
func (k *APIKeys) OwnerNow(ctx context.Context, subject string) (roles []domain.Role, known bool, err error) {
	if k == nil {
		return nil, false, nil
	}
	if roles, ok := k.cfg.configured(subject); ok {
		return roles, true, nil
	}
	o, err := k.ownerOf(ctx, subject)
	switch {
	case err != nil || o == nil:
		return nil, false, err
	case o.Disabled:
		return nil, true, nil
	}
	return o.Roles, true, nil
}

// maxNamesAsked bounds the subjects one PersonNames call looks up: a page
// of a list names at most a few per row.
const maxNamesAsked = 200

// PersonNames returns the names agentauth knows for subjects (from their
// owner records: the display name last seen, a service account's name),
// by subject (nil when none is known); a subject without one, or named as
// its subject, is left out. From memory after the first read of each.
// Labels only: the subject stays the identity. k nil (hybrid mode): none.
func (k *APIKeys) PersonNames(ctx context.Context, subjects ...string) (map[string]string, error) {
	var names map[string]string
	if k == nil {
		return nil, nil
	}
	asked := map[string]bool{}
	for _, s := range subjects {
		if s == "" || asked[s] || len(asked) >= maxNamesAsked {
			continue
		}
		asked[s] = true
		o, err := k.ownerOf(ctx, s)
		if err != nil {
			return nil, err
		}
		if o != nil && o.Name != "" && o.Name != s {
			if names == nil {
				names = map[string]string{}
			}
			names[s] = o.Name
		}
	}
	return names, nil
}

// Suspended reports whether subject is suspended: logged out by its
// identity provider (a back-channel logout naming it) or disabled by an
// ADMIN, until it signs in again or is enabled. From memory after the
// first read, kept current on every instance. k nil (hybrid mode): none.
func (k *APIKeys) Suspended(ctx context.Context, subject string) (bool, error) {
	if k == nil {
		return false, nil
	}
	o, err := k.ownerOf(ctx, subject)
	return o != nil && o.Disabled, err
}

// ownerOf returns subject's owner record, nil when it has none.
func (k *APIKeys) ownerOf(ctx context.Context, subject string) (*domain.KeyOwner, error) {
	var epoch uint64
	if k.memory != nil {
		if o, known := k.memory.owner(subject); known {
			return o, nil
		}
		epoch = k.memory.since()
	}
	o, err := k.store.GetKeyOwner(ctx, subject)
	var rec *domain.KeyOwner
	switch {
	case err == nil:
		rec = &o
	case !errors.Is(err, domain.ErrNotFound):
		return nil, err
	}
	if k.memory != nil {
		k.memory.rememberOwner(epoch, subject, rec)
	}
	return rec, nil
}

// record writes p's roles and name as its owner record (keys enabled),
// unless it holds them already; a credential that names nobody keeps the
// name known.
func (k *APIKeys) record(ctx context.Context, p domain.Principal, now time.Time) error {
	o, err := k.ownerOf(ctx, p.Subject)
	if err != nil {
		return err
	}
	if o != nil && o.Service {
		return fmt.Errorf("%s is a service account's subject: %w", p.Subject, domain.ErrConflict)
	}
	if o != nil && !o.Disabled && slices.Equal(o.Roles, p.Roles) && !renamed(o, p) {
		return nil
	}
	next := domain.KeyOwner{Subject: p.Subject, Name: p.Name, Roles: slices.Clone(p.Roles), UpdatedAt: now}
	if o != nil && p.Name == "" {
		next.Name = o.Name
	}
	if k.memory != nil {
		k.memory.forget(ports.OwnerChangeKey(p.Subject))
	}
	return k.store.PutKeyOwner(ctx, next)
}

// errKeyUnknown is the one answer to a key that is well formed but not
// ours, or whose secret does not match: they must not be told apart. The
// id, public, goes into the audit record.
func errKeyUnknown(id string) error {
	return domain.RefuseToken(domain.ReasonKeyUnknown, domain.ErrUnauthenticated, "key %s not recognised", id)
}

// Authenticate resolves a managed key. A malformed key or a wrong checksum
// is refused before any lookup. A key used before is decided from memory
// (no store read) until this or another instance revokes it or changes its
// owner, or the watcher cannot vouch for the changes.
func (k *APIKeys) Authenticate(ctx context.Context, text string) (domain.Principal, error) {
	id, err := domain.ParseManagedKey(text)
	if err != nil {
		return domain.Principal{}, err
	}
	h := domain.HashManagedKey(text)
	now := k.clock.Now()
	var epoch uint64
	if k.memory != nil {
		if r := k.memory.key(id); r != nil {
			if !domain.SameKeyHash(r.key.Hash, h[:]) {
				return domain.Principal{}, errKeyUnknown(id)
			}
			if !now.Before(r.key.ExpiresAt) {
				_, err := k.authz.CheckKeyUse(r.key, domain.KeyOwner{Subject: r.key.Owner}, now)
				return domain.Principal{}, err
			}
			return r.principal, k.touch(ctx, r, now)
		}
		epoch = k.memory.since()
	}
	key, err := k.store.GetAPIKey(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Principal{}, errKeyUnknown(id)
	}
	if err != nil {
		return domain.Principal{}, err
	}
	if !domain.SameKeyHash(key.Hash, h[:]) {
		return domain.Principal{}, errKeyUnknown(id)
	}
	owner, err := k.store.GetKeyOwner(ctx, key.Owner)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return domain.Principal{}, err
	}
	if roles, ok := k.cfg.configured(key.Owner); ok {
		owner.Roles = roles
		owner.Disabled = owner.Disabled || roles == nil // its role key was removed
	}
	scope, err := k.authz.CheckKeyUse(key, owner, now)
	if err != nil {
		return domain.Principal{}, err
	}
	r := &rememberedKey{key: key, principal: domain.Principal{Subject: key.Owner, Name: owner.Name, Roles: owner.Roles, Method: domain.MethodManagedKey,
		RoleSource: "managed key " + key.ID + " (" + key.Name + ")", Key: scope}}
	r.lastUsed.Store(key.LastUsed.UnixNano())
	if k.memory != nil {
		k.memory.rememberKey(epoch, r)
	}
	return r.principal, k.touch(ctx, r, now)
}

// touch records a use at most once a minute per key and instance.
func (k *APIKeys) touch(ctx context.Context, r *rememberedKey, now time.Time) error {
	last := r.lastUsed.Load()
	if now.UnixNano()-last < int64(touchEvery) || !r.lastUsed.CompareAndSwap(last, now.UnixNano()) {
		return nil
	}
	return k.store.TouchAPIKey(ctx, r.key.ID, now)
}
