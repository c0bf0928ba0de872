import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import {
  decode, passwordLogin, postForm, refresh, startStandin,
} from './helpers.mjs';

let s;
let admin;
before(async () => {
  s = await startStandin();
  // gocloak LoginAdmin: password grant of the public client admin-cli in master.
  const res = await postForm(`${s.origin}/realms/master/protocol/openid-connect/token`, {
    grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'admin', response_type: 'token',
  });
  assert.equal(res.status, 200, res.text);
  admin = res.json.access_token;
});
after(async () => { await s?.stop(); });

async function api(method, path, body) {
  const res = await fetch(`${s.origin}/admin/realms/agents${path}`, {
    method,
    headers: {
      authorization: `Bearer ${admin}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

describe('admin REST subset', () => {
  it('refuses calls without a master admin token', async () => {
    const res = await fetch(`${s.origin}/admin/realms/agents/users`);
    assert.equal(res.status, 401);
    const userToken = (await passwordLogin(s, 'alice', 'alice-pw')).json.access_token;
    const other = await fetch(`${s.origin}/admin/realms/agents/users`, { headers: { authorization: `Bearer ${userToken}` } });
    assert.equal(other.status, 401, 'a token of realm agents is no admin token');
  });

  it('rejects wrong admin credentials', async () => {
    const res = await postForm(`${s.origin}/realms/master/protocol/openid-connect/token`, {
      grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'wrong',
    });
    assert.equal(res.status, 401);
  });

  it('finds users by username (GetUsers) and roles by name (GetRealmRole)', async () => {
    const users = await api('GET', '/users?username=ivan');
    assert.equal(users.status, 200);
    assert.equal(users.json.length, 1);
    assert.equal(users.json[0].username, 'ivan');
    assert.equal(users.json[0].email, 'ivan@agentauth.test');
    assert.equal(users.json[0].enabled, true);
    const exact = await api('GET', '/users?username=a&exact=true');
    assert.deepEqual(exact.json, []);
    const role = await api('GET', '/roles/user');
    assert.equal(role.status, 200);
    assert.equal(role.json.name, 'user');
    assert.equal(role.json.clientRole, false);
    assert.ok(role.json.id);
    assert.equal((await api('GET', '/roles/nope')).status, 404);
  });

  it('role removal and re-adding show on the next refresh', async () => {
    const ivan = (await api('GET', '/users?username=ivan&exact=true')).json[0];
    const role = (await api('GET', '/roles/user')).json;
    const login = (await passwordLogin(s, 'ivan', 'ivan-pw')).json;
    assert.ok(decode(login.access_token).payload.realm_access.roles.includes('user'));

    const del = await api('DELETE', `/users/${ivan.id}/role-mappings/realm`, [role]);
    assert.equal(del.status, 204);
    const mapped = await api('GET', `/users/${ivan.id}/role-mappings/realm`);
    assert.ok(!mapped.json.some((r) => r.name === 'user'));

    const r1 = await refresh(s, login.refresh_token);
    assert.equal(r1.status, 200, r1.text);
    for (const t of [r1.json.access_token, r1.json.id_token]) {
      assert.ok(!decode(t).payload.realm_access.roles.includes('user'), 'role gone after refresh');
    }

    const add = await api('POST', `/users/${ivan.id}/role-mappings/realm`, [role]);
    assert.equal(add.status, 204);
    const r2 = await refresh(s, login.refresh_token);
    assert.ok(decode(r2.json.access_token).payload.realm_access.roles.includes('user'), 'role back after refresh');

    const bogus = await api('POST', `/users/${ivan.id}/role-mappings/realm`, [{ id: 'x', name: 'nope' }]);
    assert.equal(bogus.status, 404);
  });

  it('client roles and groups can be changed as well', async () => {
    const erin = (await api('GET', '/users?username=erin&exact=true')).json[0];
    const client = (await api('GET', '/clients?clientId=agentauth')).json[0];
    const lead = (await api('GET', `/clients/${client.id}/roles/lead`)).json;
    assert.equal(lead.clientRole, true);
    assert.equal((await api('POST', `/users/${erin.id}/role-mappings/clients/${client.id}`, [lead])).status, 204);
    const groups = (await api('GET', '/groups')).json;
    const auditors = groups.find((g) => g.path === '/auditors');
    assert.equal((await api('PUT', `/users/${erin.id}/groups/${auditors.id}`)).status, 204);

    const { payload } = decode((await passwordLogin(s, 'erin', 'erin-pw')).json.access_token);
    assert.deepEqual(payload.resource_access.agentauth.roles, ['lead']);
    assert.ok(payload.realm_access.roles.includes('auditor'));

    assert.equal((await api('DELETE', `/users/${erin.id}/role-mappings/clients/${client.id}`, [lead])).status, 204);
    assert.equal((await api('DELETE', `/users/${erin.id}/groups/${auditors.id}`)).status, 204);
    const again = decode((await passwordLogin(s, 'erin', 'erin-pw')).json.access_token).payload;
    assert.equal(again.resource_access.agentauth, undefined);
    assert.ok(!again.realm_access.roles.includes('auditor'));
  });
});
