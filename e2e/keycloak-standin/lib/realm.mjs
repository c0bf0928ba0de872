// The realm model: what a Keycloak realm holds after `--import-realm` of a
// realm export, and the protocol mappers that turn it into token claims.
//
// Only the parts of a realm export that affect login and tokens are read:
// realm settings (lifespans), roles (realm and client, with composites),
// groups, users (credentials, role mappings, groups), clients and client
// scopes with their protocol mappers. Everything else in the file is ignored.

import { createHash } from 'node:crypto';

// Deterministic UUID (name-based, SHA-1, v5 layout) for objects the export
// leaves without an id, so ids stay stable across restarts.
export function stableId(...parts) {
  const h = createHash('sha1').update(parts.join('\u0000')).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

const truthy = (v) => v === true || v === 'true';

// Moves the loopback URLs of a realm export's clients (redirect URIs, web
// origins, post-logout redirect URIs, back-channel logout URL) to the port of serviceUrl, so a test
// can run the client on a free port although the file names a fixed one.
// http://127.0.0.1:N and http://localhost:N both keep their host and take
// the service's port; other URLs stay as they are. Returns a new export.
export function rebaseLoopbackUrls(rep, serviceUrl) {
  const target = new URL(serviceUrl);
  if (target.protocol !== 'http:' || !['127.0.0.1', 'localhost'].includes(target.hostname) || !target.port) {
    throw new Error(`service URL ${serviceUrl}: want http://127.0.0.1:PORT or http://localhost:PORT`);
  }
  const rebase = (u) => u.replace(/^http:\/\/(127\.0\.0\.1|localhost):\d+(?=\/|$)/, (_, host) => `http://${host}:${target.port}`);
  const copy = structuredClone(rep);
  for (const c of copy.clients || []) {
    if (c.redirectUris) c.redirectUris = c.redirectUris.map(rebase);
    if (c.webOrigins) c.webOrigins = c.webOrigins.map(rebase);
    const logout = c.attributes?.['post.logout.redirect.uris'];
    if (logout) c.attributes['post.logout.redirect.uris'] = logout.split('##').map(rebase).join('##');
    const backchannel = c.attributes?.['backchannel.logout.url'];
    if (backchannel) c.attributes['backchannel.logout.url'] = rebase(backchannel);
  }
  return copy;
}

// Built-in roles Keycloak creates in every realm (RealmManager.importRealm):
// offline_access and uma_authorization, the composite default role
// default-roles-<realm>, and the roles of the built-in `account` client.
const ACCOUNT_ROLES = [
  { name: 'manage-account', composites: { client: { account: ['manage-account-links'] } } },
  { name: 'manage-account-links' },
  { name: 'view-profile' },
  { name: 'view-applications' },
  { name: 'view-consent' },
  { name: 'manage-consent', composites: { client: { account: ['view-consent'] } } },
  { name: 'delete-account' },
  { name: 'view-groups' },
];

// Splits a Keycloak claim name on dots that are not escaped with a backslash.
export function splitClaimPath(name) {
  const parts = [];
  let cur = '';
  for (let i = 0; i < name.length; i += 1) {
    const ch = name[i];
    if (ch === '\\' && name[i + 1] === '.') {
      cur += '.';
      i += 1;
    } else if (ch === '.') {
      parts.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  parts.push(cur);
  return parts;
}

function setClaim(target, name, value) {
  const path = splitClaimPath(name);
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null || Array.isArray(node[key])) {
      node[key] = {};
    }
    node = node[key];
  }
  const last = path[path.length - 1];
  if (Array.isArray(value) && Array.isArray(node[last])) {
    for (const v of value) {
      if (!node[last].includes(v)) node[last].push(v);
    }
  } else {
    node[last] = value;
  }
}

function convert(value, type) {
  if (value === undefined || value === null) return value;
  switch ((type || 'String').toLowerCase()) {
    case 'boolean':
      return value === true || String(value).toLowerCase() === 'true';
    case 'long':
    case 'int': {
      const n = Number(value);
      return Number.isFinite(n) ? Math.trunc(n) : undefined;
    }
    case 'json':
      try {
        return typeof value === 'string' ? JSON.parse(value) : value;
      } catch {
        return undefined;
      }
    default:
      return String(value);
  }
}

// Where a mapper applies, with Keycloak's backwards-compatible defaults
// (OIDCAttributeMapperHelper): an unset access.token.claim means true, an
// unset userinfo.token.claim follows id.token.claim, an unset
// introspection.token.claim follows access.token.claim.
function mapperApplies(mapper, kind) {
  const cfg = mapper.config || {};
  const access = cfg['access.token.claim'] === undefined ? true : truthy(cfg['access.token.claim']);
  const id = truthy(cfg['id.token.claim']);
  switch (kind) {
    case 'access':
      return access;
    case 'id':
      return id;
    case 'userinfo':
      return cfg['userinfo.token.claim'] === undefined ? id : truthy(cfg['userinfo.token.claim']);
    case 'introspection':
      return cfg['introspection.token.claim'] === undefined ? access : truthy(cfg['introspection.token.claim']);
    default:
      return false;
  }
}

export class Realm {
  constructor(rep) {
    if (!rep || typeof rep.realm !== 'string' || !rep.realm) {
      throw new Error('realm file has no "realm" name');
    }
    this.rep = rep;
    this.name = rep.realm;
    this.id = rep.id || stableId('realm', this.name);
    this.accessTokenLifespan = rep.accessTokenLifespan ?? 300;
    this.ssoSessionIdleTimeout = rep.ssoSessionIdleTimeout ?? 1800;
    this.ssoSessionMaxLifespan = rep.ssoSessionMaxLifespan ?? 36000;
    this.accessCodeLifespan = rep.accessCodeLifespan ?? 60;
    this.accessCodeLifespanLogin = rep.accessCodeLifespanLogin ?? 1800;
    this.loginWithEmailAllowed = rep.loginWithEmailAllowed ?? true;
    this.displayName = rep.displayName || this.name;
    this.defaultRoleName = rep.defaultRole?.name || `default-roles-${this.name.toLowerCase()}`;

    this.#loadClients(rep);
    this.#loadRoles(rep);
    this.#loadScopes(rep);
    this.#loadGroups(rep);
    this.#loadUsers(rep);
    this.#validate();
  }

  // Keycloak refuses to import a realm whose users or groups point at roles
  // or groups that do not exist; so does the stand-in, naming the culprit.
  #validate() {
    const problems = [];
    const checkRoles = (owner, realmRoles, clientRoles) => {
      for (const r of realmRoles) {
        if (!this.realmRole(r)) problems.push(`${owner}: unknown realm role "${r}"`);
      }
      for (const [clientId, names] of clientRoles) {
        if (!this.clients.has(clientId)) problems.push(`${owner}: unknown client "${clientId}"`);
        for (const r of names) {
          if (!this.clientRole(clientId, r)) problems.push(`${owner}: unknown client role "${clientId}/${r}"`);
        }
      }
    };
    for (const g of this.groups.values()) {
      checkRoles(`group ${g.path}`, g.realmRoles, Object.entries(g.clientRoles));
    }
    for (const u of this.users.values()) {
      checkRoles(`user ${u.username}`, u.realmRoles, [...u.clientRoles]);
      for (const path of u.groups) {
        if (!this.groups.has(path)) problems.push(`user ${u.username}: unknown group "${path}"`);
      }
    }
    if (problems.length) throw new Error(problems.join('; '));
  }

  // ---- loading -----------------------------------------------------------

  #loadClients(rep) {
    this.clients = new Map();
    for (const c of rep.clients || []) {
      if (!c.clientId) continue;
      this.clients.set(c.clientId, {
        id: c.id || stableId('client', this.name, c.clientId),
        clientId: c.clientId,
        enabled: c.enabled !== false,
        publicClient: c.publicClient === true,
        bearerOnly: c.bearerOnly === true,
        secret: c.secret,
        standardFlowEnabled: c.standardFlowEnabled !== false,
        directAccessGrantsEnabled: c.directAccessGrantsEnabled === true,
        serviceAccountsEnabled: c.serviceAccountsEnabled === true,
        fullScopeAllowed: c.fullScopeAllowed !== false,
        frontchannelLogout: c.frontchannelLogout === true,
        redirectUris: c.redirectUris || [],
        webOrigins: c.webOrigins || [],
        attributes: c.attributes || {},
        protocolMappers: c.protocolMappers || [],
        defaultClientScopes: c.defaultClientScopes ?? rep.defaultDefaultClientScopes ?? [],
        optionalClientScopes: c.optionalClientScopes ?? rep.defaultOptionalClientScopes ?? [],
      });
    }
    if (!this.clients.has('account')) {
      // Keycloak creates the account-management client when the import lacks it.
      this.clients.set('account', {
        id: stableId('client', this.name, 'account'),
        clientId: 'account',
        enabled: true,
        publicClient: true,
        bearerOnly: false,
        standardFlowEnabled: true,
        directAccessGrantsEnabled: false,
        fullScopeAllowed: false,
        redirectUris: [],
        webOrigins: [],
        attributes: {},
        protocolMappers: [],
        defaultClientScopes: [],
        optionalClientScopes: [],
        builtin: true,
      });
    }
  }

  #loadRoles(rep) {
    // key: "realm:<name>" or "client:<clientId>:<name>"
    this.roles = new Map();
    const add = (role, clientId) => {
      const key = clientId ? `client:${clientId}:${role.name}` : `realm:${role.name}`;
      if (this.roles.has(key)) return;
      const container = clientId ? this.clients.get(clientId) : undefined;
      this.roles.set(key, {
        id: role.id || stableId('role', this.name, clientId || '', role.name),
        name: role.name,
        description: role.description,
        clientRole: Boolean(clientId),
        clientId,
        containerId: clientId ? (container?.id || stableId('client', this.name, clientId)) : this.id,
        composites: role.composites || null,
        attributes: role.attributes || {},
      });
    };
    for (const r of rep.roles?.realm || []) add(r);
    for (const [clientId, list] of Object.entries(rep.roles?.client || {})) {
      for (const r of list) add(r, clientId);
    }
    for (const r of ACCOUNT_ROLES) add(r, 'account');
    add({ name: 'offline_access', description: '${role_offline-access}' });
    add({ name: 'uma_authorization', description: '${role_uma_authorization}' });
    add({
      name: this.defaultRoleName,
      description: `\${role_default-roles}`,
      composites: {
        realm: ['offline_access', 'uma_authorization'],
        client: { account: ['view-profile', 'manage-account'] },
      },
    });
  }

  #loadScopes(rep) {
    this.clientScopes = new Map();
    for (const s of rep.clientScopes || []) {
      if (!s.name) continue;
      this.clientScopes.set(s.name, {
        name: s.name,
        includeInTokenScope: (s.attributes?.['include.in.token.scope'] ?? 'true') === 'true',
        protocolMappers: s.protocolMappers || [],
      });
    }
  }

  #loadGroups(rep) {
    this.groups = new Map(); // path -> group
    const walk = (list, parentPath, parent) => {
      for (const g of list || []) {
        const path = `${parentPath}/${g.name}`;
        const group = {
          id: g.id || stableId('group', this.name, path),
          name: g.name,
          path,
          parent,
          realmRoles: g.realmRoles || [],
          clientRoles: g.clientRoles || {},
        };
        this.groups.set(path, group);
        walk(g.subGroups, path, group);
      }
    };
    walk(rep.groups, '', null);
  }

  #loadUsers(rep) {
    this.users = new Map(); // id -> user
    for (const u of rep.users || []) {
      if (!u.username) continue;
      const password = (u.credentials || []).find((c) => c.type === 'password');
      const user = {
        id: u.id || stableId('user', this.name, u.username.toLowerCase()),
        username: u.username.toLowerCase(),
        email: u.email ? u.email.toLowerCase() : undefined,
        emailVerified: u.emailVerified === true,
        firstName: u.firstName,
        lastName: u.lastName,
        enabled: u.enabled !== false,
        attributes: u.attributes || {},
        createdTimestamp: u.createdTimestamp || Date.now(),
        password: password?.value,
        requiredActions: u.requiredActions || [],
        realmRoles: new Set(u.realmRoles || []),
        clientRoles: new Map(Object.entries(u.clientRoles || {}).map(([k, v]) => [k, new Set(v)])),
        groups: new Set(u.groups || []),
      };
      this.users.set(user.id, user);
    }
  }

  // ---- lookups -----------------------------------------------------------

  client(clientId) {
    return this.clients.get(clientId);
  }

  userById(id) {
    return this.users.get(id);
  }

  userByUsername(username) {
    const name = String(username || '').toLowerCase();
    for (const u of this.users.values()) {
      if (u.username === name) return u;
    }
    return undefined;
  }

  userByLogin(login) {
    const value = String(login || '').toLowerCase();
    return this.userByUsername(value)
      || (this.loginWithEmailAllowed ? [...this.users.values()].find((u) => u.email && u.email === value) : undefined);
  }

  // Returns the user for valid credentials, or undefined (no hint which part
  // was wrong, as in Keycloak).
  authenticate(login, password) {
    const user = this.userByLogin(login);
    if (!user || user.password === undefined || typeof password !== 'string') return undefined;
    if (user.password !== password) return undefined;
    return user;
  }

  realmRole(name) {
    return this.roles.get(`realm:${name}`);
  }

  clientRole(clientId, name) {
    return this.roles.get(`client:${clientId}:${name}`);
  }

  realmRoles() {
    return [...this.roles.values()].filter((r) => !r.clientRole);
  }

  roleRepresentation(role) {
    return {
      id: role.id,
      name: role.name,
      description: role.description,
      composite: Boolean(role.composites && (role.composites.realm?.length || Object.keys(role.composites.client || {}).length)),
      clientRole: role.clientRole,
      containerId: role.containerId,
      attributes: role.attributes,
    };
  }

  // ---- role resolution ---------------------------------------------------

  // All role keys a user holds: direct mappings, group mappings (including
  // parent groups) and composites, expanded transitively.
  effectiveRoleKeys(user) {
    const start = [];
    for (const r of user.realmRoles) start.push(`realm:${r}`);
    for (const [clientId, set] of user.clientRoles) {
      for (const r of set) start.push(`client:${clientId}:${r}`);
    }
    for (const path of user.groups) {
      for (let g = this.groups.get(path); g; g = g.parent) {
        for (const r of g.realmRoles) start.push(`realm:${r}`);
        for (const [clientId, list] of Object.entries(g.clientRoles)) {
          for (const r of list) start.push(`client:${clientId}:${r}`);
        }
      }
    }
    const seen = new Set();
    const queue = [...start];
    while (queue.length) {
      const key = queue.shift();
      if (seen.has(key)) continue;
      const role = this.roles.get(key);
      if (!role) continue; // a mapping to an unknown role: Keycloak would not import it
      seen.add(key);
      const comp = role.composites;
      if (comp) {
        for (const r of comp.realm || []) queue.push(`realm:${r}`);
        for (const [clientId, list] of Object.entries(comp.client || {})) {
          for (const r of list) queue.push(`client:${clientId}:${r}`);
        }
      }
    }
    return seen;
  }

  resolvedRoles(user) {
    const realm = [];
    const clients = new Map();
    for (const key of this.effectiveRoleKeys(user)) {
      const role = this.roles.get(key);
      if (role.clientRole) {
        if (!clients.has(role.clientId)) clients.set(role.clientId, []);
        clients.get(role.clientId).push(role.name);
      } else {
        realm.push(role.name);
      }
    }
    return { realm, clients };
  }

  // ---- client scopes and mappers ----------------------------------------

  // The client scopes that apply to a request: the client's default scopes
  // always, its optional scopes only when requested. `openid` is not a
  // client scope in Keycloak; it only switches on the ID token.
  appliedScopes(client, requestedScope) {
    const requested = new Set(String(requestedScope || '').split(' ').filter(Boolean));
    const names = [];
    for (const name of client.defaultClientScopes) {
      if (this.clientScopes.has(name)) names.push(name);
    }
    for (const name of client.optionalClientScopes) {
      if (requested.has(name) && this.clientScopes.has(name) && !names.includes(name)) names.push(name);
    }
    return names.map((n) => this.clientScopes.get(n));
  }

  // The `scope` claim / response value as Keycloak builds it: `openid` when
  // requested, then every applied scope whose include.in.token.scope is true.
  tokenScope(client, requestedScope) {
    const requested = new Set(String(requestedScope || '').split(' ').filter(Boolean));
    const out = [];
    if (requested.has('openid')) out.push('openid');
    for (const s of this.appliedScopes(client, requestedScope)) {
      if (s.includeInTokenScope) out.push(s.name);
    }
    return out.join(' ');
  }

  mappersFor(client, requestedScope) {
    const list = [...client.protocolMappers];
    for (const s of this.appliedScopes(client, requestedScope)) list.push(...s.protocolMappers);
    return list;
  }

  // Applies the protocol mappers for one kind of output:
  // 'access' (access token), 'id' (ID token), 'userinfo', 'introspection'.
  // Returns { claims, audience } where audience holds what audience mappers
  // add (only meaningful for access tokens and introspection).
  mapClaims(kind, user, client, requestedScope) {
    const claims = {};
    const audience = [];
    const resolved = this.resolvedRoles(user);
    const addAud = (a) => {
      if (a && !audience.includes(a)) audience.push(a);
    };
    const mappers = this.mappersFor(client, requestedScope);
    for (const mapper of mappers) {
      if (!mapperApplies(mapper, kind)) continue;
      const cfg = mapper.config || {};
      const type = mapper.protocolMapper;
      const multivalued = truthy(cfg.multivalued);
      switch (type) {
        case 'oidc-usermodel-realm-role-mapper': {
          const prefix = cfg['usermodel.realmRoleMapping.rolePrefix'] || '';
          const roles = resolved.realm.map((r) => prefix + r);
          if (roles.length) setClaim(claims, cfg['claim.name'] || 'realm_access.roles', multivalued ? roles : roles.join(','));
          break;
        }
        case 'oidc-usermodel-client-role-mapper': {
          const only = cfg['usermodel.clientRoleMapping.clientId'];
          const prefix = cfg['usermodel.clientRoleMapping.rolePrefix'] || '';
          const template = cfg['claim.name'] || 'resource_access.${client_id}.roles';
          for (const [clientId, names] of resolved.clients) {
            if (only && only !== clientId) continue;
            if (!names.length) continue;
            const roles = names.map((r) => prefix + r);
            setClaim(claims, template.replaceAll('${client_id}', clientId.replace(/\./g, '\\.')), multivalued ? roles : roles.join(','));
          }
          break;
        }
        case 'oidc-audience-mapper':
          addAud(cfg['included.client.audience']);
          addAud(cfg['included.custom.audience']);
          break;
        case 'oidc-audience-resolve-mapper':
          for (const [clientId, names] of resolved.clients) {
            if (clientId !== client.clientId && names.length) addAud(clientId);
          }
          break;
        case 'oidc-usermodel-attribute-mapper':
        case 'oidc-usermodel-property-mapper': {
          const attr = cfg['user.attribute'];
          const name = cfg['claim.name'];
          if (!attr || !name) break;
          let value;
          switch (attr) {
            case 'username': value = user.username; break;
            case 'email': value = user.email; break;
            case 'firstName': value = user.firstName; break;
            case 'lastName': value = user.lastName; break;
            case 'emailVerified': value = user.emailVerified; break;
            case 'enabled': value = user.enabled; break;
            case 'id': value = user.id; break;
            default: {
              const v = user.attributes[attr];
              value = Array.isArray(v) ? (multivalued ? v : v[0]) : v;
            }
          }
          if (value === undefined || value === null) break;
          const converted = Array.isArray(value) ? value.map((x) => convert(x, cfg['jsonType.label'])) : convert(value, cfg['jsonType.label']);
          if (converted !== undefined) setClaim(claims, name, converted);
          break;
        }
        case 'oidc-full-name-mapper': {
          const name = [user.firstName, user.lastName].filter(Boolean).join(' ');
          if (name) claims.name = name;
          break;
        }
        case 'oidc-hardcoded-claim-mapper':
          if (cfg['claim.name']) setClaim(claims, cfg['claim.name'], convert(cfg['claim.value'], cfg['jsonType.label']));
          break;
        case 'oidc-group-membership-mapper': {
          const full = cfg['full.path'] === undefined ? true : truthy(cfg['full.path']);
          const groups = [...user.groups].map((p) => (full ? p : p.split('/').pop()));
          if (groups.length) setClaim(claims, cfg['claim.name'] || 'groups', groups);
          break;
        }
        case 'oidc-allowed-origins-mapper':
          if (kind === 'access' || kind === 'introspection') {
            const origins = this.allowedOrigins(client);
            if (origins.length) claims['allowed-origins'] = origins;
          }
          break;
        case 'oidc-acr-mapper':
          claims.acr = '1';
          break;
        case 'oidc-sub-mapper':
          claims.sub = user.id;
          break;
        default:
          // Mapper types the stand-in does not imitate are skipped.
          break;
      }
    }
    return { claims, audience };
  }

  // Web origins of a client; "+" means the origins of its redirect URIs.
  allowedOrigins(client) {
    const out = new Set();
    for (const o of client.webOrigins) {
      if (o === '+') {
        for (const uri of client.redirectUris) {
          try {
            out.add(new URL(uri.replace(/\*$/, '')).origin);
          } catch {
            // not an absolute URI
          }
        }
      } else {
        out.add(o);
      }
    }
    return [...out];
  }

  // Valid post-logout redirect URIs: attribute post.logout.redirect.uris,
  // "##"-separated; "+" means the client's redirect URIs. A trailing "*" is a
  // prefix wildcard, as in Keycloak.
  postLogoutRedirectAllowed(client, uri) {
    const attr = client.attributes['post.logout.redirect.uris'];
    let patterns = [];
    if (attr) {
      for (const p of attr.split('##')) {
        if (p === '+') patterns.push(...client.redirectUris);
        else if (p) patterns.push(p);
      }
    }
    return patterns.some((p) => (p.endsWith('*') ? uri.startsWith(p.slice(0, -1)) : uri === p));
  }

  redirectUriAllowed(client, uri) {
    return client.redirectUris.some((p) => (p.endsWith('*') ? uri.startsWith(p.slice(0, -1)) : uri === p));
  }

  // ---- admin-side changes --------------------------------------------------

  userRepresentation(user) {
    return {
      id: user.id,
      username: user.username,
      firstName: user.firstName,
      lastName: user.lastName,
      email: user.email,
      emailVerified: user.emailVerified,
      createdTimestamp: user.createdTimestamp,
      enabled: user.enabled,
      totp: false,
      disableableCredentialTypes: [],
      requiredActions: user.requiredActions,
      notBefore: 0,
      access: {
        manageGroupMembership: true, view: true, mapRoles: true, impersonate: false, manage: true,
      },
      ...(Object.keys(user.attributes).length ? { attributes: user.attributes } : {}),
    };
  }
}
