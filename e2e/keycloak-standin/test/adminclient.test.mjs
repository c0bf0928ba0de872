// The admin endpoints the Go e2e suite uses, driven by Keycloak's official
// admin client (@keycloak/keycloak-admin-client), so that the stand-in
// cannot drift from Keycloak's API shapes: a request the client builds
// differently, or an answer it cannot read, fails here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import KcAdminClient from '@keycloak/keycloak-admin-client';

import { decode, passwordLogin, startStandin } from './helpers.mjs';

let s;
let kc;
before(async () => {
  s = await startStandin();
  kc = new KcAdminClient({ baseUrl: s.origin, realmName: 'master' });
  await kc.auth({
    grantType: 'password', clientId: 'admin-cli', username: 'admin', password: 'admin',
  });
  kc.setConfig({ realmName: 'agents' });
});
after(async () => { await s?.stop(); });

describe('official admin client against the stand-in', () => {
  it('finds a user by exact username (users?username=&exact=true)', async () => {
    const users = await kc.users.find({ username: 'ivan', exact: true });
    assert.equal(users.length, 1);
    assert.equal(users[0].username, 'ivan');
    assert.ok(users[0].id);
  });

  it('adds and removes a realm role (roles/{name}, users/{id}/role-mappings/realm)', async () => {
    const [ivan] = await kc.users.find({ username: 'ivan', exact: true });
    const lead = await kc.roles.findOneByName({ name: 'lead' });
    assert.equal(lead.name, 'lead');
    const has = async () => (await kc.users.listRealmRoleMappings({ id: ivan.id })).some((r) => r.name === 'lead');
    await kc.users.addRealmRoleMappings({ id: ivan.id, roles: [{ id: lead.id, name: lead.name }] });
    assert.equal(await has(), true);
    const token = (await passwordLogin(s, 'ivan', 'ivan-pw')).json.access_token;
    assert.ok(decode(token).payload.realm_access.roles.includes('lead'), 'the next token carries the role');
    await kc.users.delRealmRoleMappings({ id: ivan.id, roles: [{ id: lead.id, name: lead.name }] });
    assert.equal(await has(), false);
  });

  it('signs a user out (users/{id}/logout)', async () => {
    const login = await passwordLogin(s, 'bob', 'bob-pw');
    assert.equal(login.status, 200);
    const [bob] = await kc.users.find({ username: 'bob', exact: true });
    await kc.users.logout({ id: bob.id });
    const res = await fetch(`${s.oidc}/token/introspect`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('agentauth:agentauth-e2e-secret').toString('base64')}`,
      },
      body: new URLSearchParams({ token: login.json.access_token }),
    });
    assert.equal((await res.json()).active, false, 'the session is over');
  });
});
