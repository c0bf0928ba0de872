import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  AGENTAUTH, basic, decode, passwordLogin, postForm, startStandin, verify,
} from './helpers.mjs';

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

// The realm file gives the agentauth client a back-channel logout URL on
// the service port; a small server there records what the stand-in posts.
let s;
let rp;
let received = [];
before(async () => {
  rp = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      received.push({ path: req.url, type: req.headers['content-type'], form: new URLSearchParams(body) });
      res.writeHead(200, { 'cache-control': 'no-store' }).end();
    });
  });
  await new Promise((resolve) => { rp.listen(0, '127.0.0.1', resolve); });
  s = await startStandin({ STANDIN_SERVICE_URL: `http://127.0.0.1:${rp.address().port}` });
});
after(async () => {
  await s?.stop();
  rp?.close();
});

async function adminToken(standin = s) {
  const res = await postForm(`${standin.origin}/realms/master/protocol/openid-connect/token`, {
    grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'admin',
  });
  assert.equal(res.status, 200, res.text);
  return res.json.access_token;
}

describe('back-channel logout', () => {
  it('admin sign-out posts one verifiable logout token per session', async () => {
    received = [];
    const one = await passwordLogin(s, 'alice', 'alice-pw');
    const two = await passwordLogin(s, 'alice', 'alice-pw');
    const sids = [decode(one.json.access_token).payload.sid, decode(two.json.access_token).payload.sid];
    const admin = await adminToken();
    const users = await (await fetch(`${s.origin}/admin/realms/agents/users?exact=true&username=alice`, { headers: { authorization: `Bearer ${admin}` } })).json();
    const res = await fetch(`${s.origin}/admin/realms/agents/users/${users[0].id}/logout`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });
    assert.equal(res.status, 204);
    assert.equal(received.length, 2);
    const seen = [];
    for (const r of received) {
      assert.equal(r.path, '/auth/backchannel-logout');
      assert.match(r.type, /^application\/x-www-form-urlencoded/);
      const { payload, header } = await verify(s, r.form.get('logout_token'));
      assert.equal(header.alg, 'RS256');
      assert.equal(payload.aud, AGENTAUTH.id);
      assert.equal(payload.sub, users[0].id);
      assert.equal(payload.typ, 'Logout');
      assert.deepEqual(payload.events[EVENT], {});
      assert.ok(payload.jti && payload.iat && !('nonce' in payload));
      seen.push(payload.sid);
    }
    assert.deepEqual(seen.sort(), sids.sort());
    const log = await (await fetch(`${s.origin}/standin/logout-tokens`)).json();
    assert.equal(log.sent.length, 2);
    assert.ok(log.sent.every((e) => e.status === 200));
    // The sessions are over: a refresh is refused.
    const r = await postForm(`${s.oidc}/token`, { grant_type: 'refresh_token', refresh_token: one.json.refresh_token }, { authorization: basic(AGENTAUTH.id, AGENTAUTH.secret) });
    assert.equal(r.status, 400);
  });

  it('a logout with the refresh token (gocloak Logout) posts one too', async () => {
    received = [];
    const login = await passwordLogin(s, 'bob', 'bob-pw');
    const res = await postForm(`${s.oidc}/logout`, { refresh_token: login.json.refresh_token }, { authorization: basic(AGENTAUTH.id, AGENTAUTH.secret) });
    assert.equal(res.status, 204);
    assert.equal(received.length, 1);
    assert.equal(decode(received[0].form.get('logout_token')).payload.sid, decode(login.json.access_token).payload.sid);
  });

  // Keycloak 26.7 sends no back-channel logout to a client with
  // front-channel logout on (AuthenticationManager skips it): neither does
  // the stand-in.
  it('skips a client with frontchannelLogout on, as Keycloak does', async () => {
    const realm = JSON.parse(fs.readFileSync(new URL('../../../deploy/keycloak/realm-agents.json', import.meta.url)));
    realm.clients.find((c) => c.clientId === AGENTAUTH.id).frontchannelLogout = true;
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'standin-')), 'realm.json');
    fs.writeFileSync(file, JSON.stringify(realm));
    const front = await startStandin({ STANDIN_REALM_FILE: file, STANDIN_SERVICE_URL: `http://127.0.0.1:${rp.address().port}` });
    try {
      received = [];
      await passwordLogin(front, 'carol', 'carol-pw');
      const admin = await adminToken(front);
      const users = await (await fetch(`${front.origin}/admin/realms/agents/users?exact=true&username=carol`, { headers: { authorization: `Bearer ${admin}` } })).json();
      const res = await fetch(`${front.origin}/admin/realms/agents/users/${users[0].id}/logout`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });
      assert.equal(res.status, 204);
      assert.equal(received.length, 0);
      assert.equal((await (await fetch(`${front.origin}/standin/logout-tokens`)).json()).sent.length, 0);
    } finally {
      await front.stop();
    }
  });
});
