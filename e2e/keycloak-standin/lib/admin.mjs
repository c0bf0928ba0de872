// A small subset of Keycloak's admin REST API (/admin/realms/{realm}/...),
// enough for gocloak calls in tests: users, realm roles, client roles and
// group membership. Callers authenticate with an access token of the master
// realm whose user holds the master realm role "admin" (gocloak LoginAdmin).
// Changes live in memory and show in the next token or refresh.

import { isJson, readBody, sendEmpty, sendJson } from './http.mjs';

const NOT_FOUND = { error: 'HTTP 404 Not Found' };

function groupRep(group) {
  return {
    id: group.id, name: group.name, path: group.path, subGroups: [],
  };
}

export class AdminApi {
  constructor({ realms, master }) {
    this.realms = realms; // name -> RealmServer
    this.master = master;
  }

  async authorized(req) {
    const header = req.headers.authorization || '';
    if (!/^bearer\s+/i.test(header)) return false;
    const payload = await this.master.verifyAccessToken(header.replace(/^bearer\s+/i, '').trim());
    return Boolean(payload?.realm_access?.roles?.includes('admin'));
  }

  async handle(req, res, url) {
    const m = url.pathname.match(/^\/admin\/realms\/([^/]+)(\/.*)?$/);
    if (!m) return sendJson(res, 404, NOT_FOUND);
    if (!(await this.authorized(req))) return sendJson(res, 401, { error: 'HTTP 401 Unauthorized' });
    const rs = this.realms.get(decodeURIComponent(m[1]));
    if (!rs) return sendJson(res, 404, { error: 'Realm not found.' });
    const parts = (m[2] || '').split('/').filter(Boolean).map(decodeURIComponent);
    let body;
    if (req.method === 'POST' || req.method === 'PUT' || req.method === 'DELETE') {
      const text = await readBody(req);
      if (text && isJson(req)) {
        try {
          body = JSON.parse(text);
        } catch {
          return sendJson(res, 400, { error: 'unknown_error' });
        }
      }
    }
    return this.route(rs, req.method, parts, url.searchParams, body, res);
  }

  route(rs, method, parts, query, body, res) {
    const { realm } = rs;
    const [a, id, b, c, d] = parts;

    if (!a) {
      if (method !== 'GET') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
      return sendJson(res, 200, {
        id: realm.id, realm: realm.name, displayName: realm.displayName, enabled: true, accessTokenLifespan: rs.accessTokenTtl,
      });
    }

    if (a === 'users') {
      if (!id) {
        if (method !== 'GET') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
        return sendJson(res, 200, this.searchUsers(realm, query).map((u) => realm.userRepresentation(u)));
      }
      if (id === 'count' && parts.length === 2) return sendJson(res, 200, this.searchUsers(realm, query).length);
      const user = realm.userById(id);
      if (!user) return sendJson(res, 404, { error: 'User not found' });
      if (!b) {
        if (method !== 'GET') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
        return sendJson(res, 200, realm.userRepresentation(user));
      }
      if (b === 'groups') return this.userGroups(realm, user, method, c, res);
      if (b === 'logout' && !c) {
        // Ends every session of the user, with back-channel logouts (Keycloak's "Sign out").
        if (method !== 'POST') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
        return rs.endUserSessions(user.id).then(() => sendEmpty(res, 204));
      }
      if (b === 'role-mappings') return this.roleMappings(realm, user, method, c, d, parts[5], body, res);
      return sendJson(res, 404, NOT_FOUND);
    }

    if (a === 'roles' && method === 'GET') {
      if (!id) return sendJson(res, 200, realm.realmRoles().map((r) => realm.roleRepresentation(r)));
      const role = realm.realmRole(id);
      if (!role) return sendJson(res, 404, { error: 'Could not find role' });
      return sendJson(res, 200, realm.roleRepresentation(role));
    }

    if (a === 'clients' && method === 'GET') {
      const clients = [...realm.clients.values()];
      if (!id) {
        const wanted = query.get('clientId');
        return sendJson(res, 200, clients
          .filter((cl) => !wanted || cl.clientId === wanted)
          .map((cl) => ({
            id: cl.id, clientId: cl.clientId, enabled: cl.enabled, publicClient: cl.publicClient,
          })));
      }
      const client = clients.find((cl) => cl.id === id);
      if (!client) return sendJson(res, 404, { error: 'Could not find client' });
      if (!b) return sendJson(res, 200, { id: client.id, clientId: client.clientId, enabled: client.enabled, publicClient: client.publicClient });
      if (b === 'roles') {
        const roles = [...realm.roles.values()].filter((r) => r.clientId === client.clientId);
        if (!c) return sendJson(res, 200, roles.map((r) => realm.roleRepresentation(r)));
        const role = roles.find((r) => r.name === c);
        if (!role) return sendJson(res, 404, { error: 'Could not find role' });
        return sendJson(res, 200, realm.roleRepresentation(role));
      }
      return sendJson(res, 404, NOT_FOUND);
    }

    if (a === 'groups' && method === 'GET') {
      const top = [...realm.groups.values()].filter((g) => !g.parent);
      if (!id) return sendJson(res, 200, top.map(groupRep));
      const group = [...realm.groups.values()].find((g) => g.id === id);
      if (!group) return sendJson(res, 404, { error: 'Could not find group by id' });
      return sendJson(res, 200, { ...groupRep(group), realmRoles: group.realmRoles, clientRoles: group.clientRoles });
    }

    return sendJson(res, 404, NOT_FOUND);
  }

  // GET users: username/email/firstName/lastName match as substrings unless
  // exact=true; search matches any of them; first/max page the result.
  searchUsers(realm, query) {
    const exact = query.get('exact') === 'true';
    const match = (value, wanted) => {
      if (wanted === null) return true;
      const v = String(value || '').toLowerCase();
      const w = wanted.toLowerCase();
      return exact ? v === w : v.includes(w);
    };
    const search = query.get('search');
    let users = [...realm.users.values()].filter((u) => match(u.username, query.get('username'))
      && match(u.email, query.get('email'))
      && match(u.firstName, query.get('firstName'))
      && match(u.lastName, query.get('lastName'))
      && (search === null || search === '*'
        || [u.username, u.email, u.firstName, u.lastName].some((v) => String(v || '').toLowerCase().includes(search.toLowerCase().replace(/\*/g, '')))));
    users.sort((x, y) => x.username.localeCompare(y.username));
    const first = Number(query.get('first') || 0);
    const max = query.get('max') === null ? 100 : Number(query.get('max'));
    users = users.slice(first, first + max);
    return users;
  }

  userGroups(realm, user, method, groupId, res) {
    if (!groupId) {
      if (method !== 'GET') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
      return sendJson(res, 200, [...user.groups].map((p) => realm.groups.get(p)).filter(Boolean).map(groupRep));
    }
    const group = [...realm.groups.values()].find((g) => g.id === groupId);
    if (!group) return sendJson(res, 404, { error: 'Could not find group by id' });
    if (method === 'PUT') user.groups.add(group.path);
    else if (method === 'DELETE') user.groups.delete(group.path);
    else return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    return sendEmpty(res, 204);
  }

  // /users/{id}/role-mappings[/realm[/composite] | /clients/{clientUuid}[/composite]]
  roleMappings(realm, user, method, kind, arg, extra, body, res) {
    if (!kind) {
      if (method !== 'GET') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
      const clientMappings = {};
      for (const [clientId, names] of user.clientRoles) {
        const client = realm.client(clientId);
        const mappings = [...names].map((n) => realm.clientRole(clientId, n)).filter(Boolean).map((r) => realm.roleRepresentation(r));
        if (client && mappings.length) clientMappings[clientId] = { id: client.id, client: clientId, mappings };
      }
      return sendJson(res, 200, {
        realmMappings: [...user.realmRoles].map((n) => realm.realmRole(n)).filter(Boolean).map((r) => realm.roleRepresentation(r)),
        ...(Object.keys(clientMappings).length ? { clientMappings } : {}),
      });
    }

    let clientId;
    let composite;
    if (kind === 'realm') {
      composite = arg === 'composite';
    } else if (kind === 'clients' && arg) {
      const client = [...realm.clients.values()].find((cl) => cl.id === arg);
      if (!client) return sendJson(res, 404, { error: 'Client not found' });
      clientId = client.clientId;
      composite = extra === 'composite';
    } else {
      return sendJson(res, 404, NOT_FOUND);
    }
    const lookup = (name) => (clientId ? realm.clientRole(clientId, name) : realm.realmRole(name));

    if (method === 'GET') {
      if (composite) {
        const keys = realm.effectiveRoleKeys(user);
        const roles = [...keys].map((k) => realm.roles.get(k)).filter((r) => (clientId ? r.clientId === clientId : !r.clientRole));
        return sendJson(res, 200, roles.map((r) => realm.roleRepresentation(r)));
      }
      const names = clientId ? [...(user.clientRoles.get(clientId) || [])] : [...user.realmRoles];
      return sendJson(res, 200, names.map(lookup).filter(Boolean).map((r) => realm.roleRepresentation(r)));
    }
    if ((method !== 'POST' && method !== 'DELETE') || composite) return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    if (!Array.isArray(body)) return sendJson(res, 400, { error: 'unknown_error' });
    const roles = [];
    for (const rep of body) {
      const role = rep?.name ? lookup(rep.name) : [...realm.roles.values()].find((r) => r.id === rep?.id);
      if (!role || (rep.id && rep.id !== role.id) || (clientId ? role.clientId !== clientId : role.clientRole)) {
        return sendJson(res, 404, { error: 'Role not found' });
      }
      roles.push(role);
    }
    let set;
    if (clientId) {
      if (!user.clientRoles.has(clientId)) user.clientRoles.set(clientId, new Set());
      set = user.clientRoles.get(clientId);
    } else {
      set = user.realmRoles;
    }
    for (const role of roles) {
      if (method === 'POST') set.add(role.name);
      else set.delete(role.name);
    }
    return sendEmpty(res, 204);
  }
}
