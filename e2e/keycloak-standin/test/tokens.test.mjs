import assert from 'node:assert/strict';
import {
  mkdtemp, readFile, rm, writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  AGENTAUTH, OTHER_APP, atHash, basic, decode, passwordLogin, postForm, refresh, startStandin, until, verify,
} from './helpers.mjs';

const DEFAULT_ROLES = ['default-roles-agents', 'offline_access', 'uma_authorization'];

let s;
before(async () => { s = await startStandin(); });
after(async () => { await s?.stop(); });

describe('discovery and realm info', () => {
  it('publishes Keycloak endpoint URLs under the issuer', async () => {
    const res = await fetch(`${s.issuer}/.well-known/openid-configuration`);
    assert.equal(res.status, 200);
    const d = await res.json();
    const base = `${s.issuer}/protocol/openid-connect`;
    assert.equal(d.issuer, s.issuer);
    assert.match(s.issuer, /^http:\/\/127\.0\.0\.1:\d+\/realms\/agents$/);
    assert.equal(d.authorization_endpoint, `${base}/auth`);
    assert.equal(d.token_endpoint, `${base}/token`);
    assert.equal(d.jwks_uri, `${base}/certs`);
    assert.equal(d.userinfo_endpoint, `${base}/userinfo`);
    assert.equal(d.end_session_endpoint, `${base}/logout`);
    assert.equal(d.introspection_endpoint, `${base}/token/introspect`);
    assert.equal(d.revocation_endpoint, `${base}/revoke`);
    assert.ok(d.grant_types_supported.includes('password'));
    assert.ok(d.code_challenge_methods_supported.includes('S256'));
    assert.ok(d.id_token_signing_alg_values_supported.includes('RS256'));
  });

  it('answers GET {issuer} with realm info like Keycloak', async () => {
    const res = await fetch(s.issuer);
    assert.equal(res.status, 200);
    const info = await res.json();
    assert.equal(info.realm, 'agents');
    assert.equal(info['token-service'], `${s.issuer}/protocol/openid-connect`);
    assert.equal(info['account-service'], `${s.issuer}/account`);
    assert.equal(info['tokens-not-before'], 0);
    assert.match(info.public_key, /^MIIB[A-Za-z0-9+/=]+$/);
  });

  it('publishes RS256 signing keys with kid in certs', async () => {
    const { keys } = await (await fetch(`${s.oidc}/certs`)).json();
    assert.equal(keys.length, 1);
    assert.equal(keys[0].kty, 'RSA');
    assert.equal(keys[0].alg, 'RS256');
    assert.equal(keys[0].use, 'sig');
    assert.ok(keys[0].kid);
    assert.equal(keys[0].d, undefined, 'private part must not be published');
  });
});

describe('password grant (gocloak Login)', () => {
  // Roles as the realm file gives them; the service keeps only the four
  // known names.
  const cases = [
    { user: 'alice', realm: ['admin'] },
    { user: 'bob', realm: ['user'] },
    { user: 'carol', realm: ['lead'] },
    { user: 'dave', realm: ['auditor'] },
    { user: 'erin', realm: [] },
    { user: 'frank', realm: ['app-admin'] },
    { user: 'grace', realm: [], clients: { 'other-app': ['admin'] } },
    { user: 'henry', realm: [], clients: { agentauth: ['lead'] } },
  ];
  for (const c of cases) {
    it(`${c.user}: role claims in access and ID token`, async () => {
      const res = await passwordLogin(s, c.user, `${c.user}-pw`);
      assert.equal(res.status, 200, res.text);
      const t = res.json;
      assert.equal(t.token_type, 'Bearer');
      assert.equal(t.expires_in, 300);
      assert.ok(t.refresh_expires_in > 0);
      assert.equal(t['not-before-policy'], 0);
      assert.ok(t.session_state);
      assert.equal(t.scope, 'openid profile email');

      const at = await verify(s, t.access_token);
      const id = await verify(s, t.id_token);
      assert.equal(at.header.alg, 'RS256');
      assert.ok(at.header.kid);
      assert.equal(at.payload.typ, 'Bearer');
      assert.equal(at.payload.azp, 'agentauth');
      assert.equal(at.payload.preferred_username, c.user);
      assert.equal(at.payload.email, `${c.user}@agentauth.test`);
      assert.equal(at.payload.sid, t.session_state);
      assert.ok(at.payload.jti && at.payload.iat && at.payload.exp);
      const aud = [].concat(at.payload.aud);
      assert.ok(aud.includes('agentauth'), `aud ${aud}`);
      assert.ok(aud.includes('account'), `aud ${aud}`);

      assert.equal(id.payload.typ, 'ID');
      assert.equal(id.payload.aud, 'agentauth');
      assert.equal(id.payload.azp, 'agentauth');
      assert.equal(id.payload.sid, t.session_state);
      assert.equal(id.payload.sub, at.payload.sub);
      assert.equal(id.payload.at_hash, atHash(t.access_token));

      for (const p of [at.payload, id.payload]) {
        assert.deepEqual([...p.realm_access.roles].sort(), [...DEFAULT_ROLES, ...c.realm].sort());
        assert.deepEqual([...p.resource_access.account.roles].sort(), ['manage-account', 'manage-account-links', 'view-profile']);
        const clients = Object.keys(p.resource_access).filter((k) => k !== 'account').sort();
        assert.deepEqual(clients, Object.keys(c.clients || {}).sort());
        for (const [clientId, roles] of Object.entries(c.clients || {})) {
          assert.deepEqual(p.resource_access[clientId].roles, roles);
        }
      }
      if (c.clients?.['other-app']) assert.ok(aud.includes('other-app'), 'audience resolve adds other-app');
    });
  }

  it('accepts client_secret_post as well', async () => {
    const res = await postForm(`${s.oidc}/token`, {
      grant_type: 'password', username: 'bob', password: 'bob-pw', scope: 'openid', client_id: AGENTAUTH.id, client_secret: AGENTAUTH.secret,
    });
    assert.equal(res.status, 200, res.text);
    assert.ok(res.json.id_token);
  });

  it('omits the ID token without scope openid', async () => {
    const res = await passwordLogin(s, 'bob', 'bob-pw', AGENTAUTH, '');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.id_token, undefined);
    assert.equal(res.json.scope, 'profile email');
  });

  it('issues tokens to other-app with its own azp', async () => {
    const res = await passwordLogin(s, 'grace', 'grace-pw', OTHER_APP);
    assert.equal(res.status, 200, res.text);
    const { payload } = decode(res.json.access_token);
    assert.equal(payload.azp, 'other-app');
    assert.deepEqual(payload.resource_access['other-app'].roles, ['admin']);
  });

  it('answers a wrong password with 401 invalid_grant', async () => {
    const res = await passwordLogin(s, 'alice', 'wrong');
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { error: 'invalid_grant', error_description: 'Invalid user credentials' });
    const unknown = await passwordLogin(s, 'nobody', 'x');
    assert.equal(unknown.status, 401);
    assert.equal(unknown.json.error, 'invalid_grant');
  });

  it('answers a wrong client secret with 401', async () => {
    const res = await passwordLogin(s, 'alice', 'alice-pw', { id: 'agentauth', secret: 'nope' });
    assert.equal(res.status, 401);
    assert.equal(res.json.error, 'unauthorized_client');
    const unknown = await passwordLogin(s, 'alice', 'alice-pw', { id: 'ghost', secret: 'x' });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.json.error, 'invalid_client');
  });
});

describe('refresh, userinfo, introspection, logout', () => {
  it('refreshes with new tokens of the same session', async () => {
    const login = (await passwordLogin(s, 'alice', 'alice-pw')).json;
    const res = await refresh(s, login.refresh_token);
    assert.equal(res.status, 200, res.text);
    const at = await verify(s, res.json.access_token);
    assert.equal(at.payload.sid, login.session_state);
    assert.ok(at.payload.realm_access.roles.includes('admin'));
    const id = await verify(s, res.json.id_token);
    assert.equal(id.payload.typ, 'ID');
    assert.equal(id.payload.at_hash, atHash(res.json.access_token));
    assert.ok(res.json.refresh_token);
  });

  it('rejects a refresh token of another client', async () => {
    const login = (await passwordLogin(s, 'alice', 'alice-pw')).json;
    const res = await refresh(s, login.refresh_token, OTHER_APP);
    assert.equal(res.status, 400);
    assert.equal(res.json.error, 'invalid_grant');
  });

  it('serves userinfo for a live access token', async () => {
    const login = (await passwordLogin(s, 'henry', 'henry-pw')).json;
    const res = await fetch(`${s.oidc}/userinfo`, { headers: { authorization: `Bearer ${login.access_token}` } });
    assert.equal(res.status, 200);
    const info = await res.json();
    assert.equal(info.preferred_username, 'henry');
    assert.deepEqual(info.resource_access.agentauth.roles, ['lead']);
    const bad = await fetch(`${s.oidc}/userinfo`, { headers: { authorization: 'Bearer nope' } });
    assert.equal(bad.status, 401);
  });

  it('introspects access and refresh tokens (RFC 7662) with client auth', async () => {
    const login = (await passwordLogin(s, 'dave', 'dave-pw')).json;
    const auth = { authorization: basic(AGENTAUTH.id, AGENTAUTH.secret) };
    const at = await postForm(`${s.oidc}/token/introspect`, { token: login.access_token, token_type_hint: 'requesting_party_token' }, auth);
    assert.equal(at.status, 200);
    assert.equal(at.json.active, true);
    assert.equal(at.json.username, 'dave');
    assert.equal(at.json.client_id, 'agentauth');
    assert.ok(at.json.realm_access.roles.includes('auditor'));
    const rt = await postForm(`${s.oidc}/token/introspect`, { token: login.refresh_token }, auth);
    assert.equal(rt.json.active, true);
    assert.equal(rt.json.typ, 'Refresh');
    const junk = await postForm(`${s.oidc}/token/introspect`, { token: 'junk' }, auth);
    assert.deepEqual(junk.json, { active: false });
    const noAuth = await postForm(`${s.oidc}/token/introspect`, { token: login.access_token });
    assert.equal(noAuth.status, 401);
  });

  it('logout with the refresh token (gocloak Logout) ends the session', async () => {
    const login = (await passwordLogin(s, 'bob', 'bob-pw')).json;
    // gocloak sends Basic auth plus client_id and refresh_token in the form.
    const out = await postForm(`${s.oidc}/logout`, { client_id: AGENTAUTH.id, refresh_token: login.refresh_token }, {
      authorization: basic(AGENTAUTH.id, AGENTAUTH.secret),
    });
    assert.equal(out.status, 204, out.text);
    const again = await refresh(s, login.refresh_token);
    assert.equal(again.status, 400);
    assert.deepEqual(again.json, { error: 'invalid_grant', error_description: 'Session not active' });
    const info = await fetch(`${s.oidc}/userinfo`, { headers: { authorization: `Bearer ${login.access_token}` } });
    assert.equal(info.status, 401);
    const intro = await postForm(`${s.oidc}/token/introspect`, { token: login.access_token }, {
      authorization: basic(AGENTAUTH.id, AGENTAUTH.secret),
    });
    assert.deepEqual(intro.json, { active: false });
  });

  it('logout also accepts client_id and client_secret in the form', async () => {
    const login = (await passwordLogin(s, 'bob', 'bob-pw')).json;
    const out = await postForm(`${s.oidc}/logout`, {
      client_id: AGENTAUTH.id, client_secret: AGENTAUTH.secret, refresh_token: login.refresh_token,
    });
    assert.equal(out.status, 204, out.text);
    assert.equal((await refresh(s, login.refresh_token)).status, 400);
    const bad = await postForm(`${s.oidc}/logout`, { client_id: AGENTAUTH.id, client_secret: 'wrong', refresh_token: login.refresh_token });
    assert.equal(bad.status, 401);
  });

  it('revocation of the refresh token stops refreshes', async () => {
    const login = (await passwordLogin(s, 'bob', 'bob-pw')).json;
    const res = await postForm(`${s.oidc}/revoke`, { token: login.refresh_token, token_type_hint: 'refresh_token' }, {
      authorization: basic(AGENTAUTH.id, AGENTAUTH.secret),
    });
    assert.equal(res.status, 200);
    assert.equal((await refresh(s, login.refresh_token)).status, 400);
  });
});

describe('key rotation hooks', () => {
  it('publishes the new key next to the old one, then drops the old one', async () => {
    const before = (await passwordLogin(s, 'alice', 'alice-pw')).json;
    const oldKid = decode(before.access_token).header.kid;

    const rot = await postForm(`${s.origin}/standin/rotate-keys`, {});
    assert.equal(rot.status, 200, rot.text);
    const certs = (await (await fetch(`${s.oidc}/certs`)).json()).keys.map((k) => k.kid);
    assert.equal(certs.length, 2);
    assert.ok(certs.includes(oldKid));
    assert.ok(certs.includes(rot.json.kid));

    const after1 = (await passwordLogin(s, 'alice', 'alice-pw')).json;
    assert.equal(decode(after1.access_token).header.kid, rot.json.kid);
    assert.equal(decode(after1.id_token).header.kid, rot.json.kid);
    await verify(s, before.access_token); // old key still published
    const info = await fetch(s.issuer).then((r) => r.json());
    assert.ok(info.public_key);

    // Sessions survive the rotation.
    assert.equal((await refresh(s, before.refresh_token)).status, 200);

    const drop = await postForm(`${s.origin}/standin/rotate-keys?drop_old=true`, {});
    assert.equal(drop.status, 200);
    const left = (await (await fetch(`${s.oidc}/certs`)).json()).keys.map((k) => k.kid);
    assert.deepEqual(left, [drop.json.kid]);
    await assert.rejects(verify(s, before.access_token));
    await assert.rejects(verify(s, after1.access_token));
  });
});

describe('access token lifetime override', () => {
  it('STANDIN_ACCESS_TOKEN_TTL shortens access tokens; refresh still works', async () => {
    const short = await startStandin({ STANDIN_ACCESS_TOKEN_TTL: '1' });
    try {
      const login = (await passwordLogin(short, 'ivan', 'ivan-pw')).json;
      assert.equal(login.expires_in, 1);
      const { payload } = decode(login.access_token);
      assert.equal(payload.exp - payload.iat, 1);
      // Refused once a second has passed: wait for that, not for time.
      await until('the expired access token refused at userinfo', async () => {
        const info = await fetch(`${short.oidc}/userinfo`, { headers: { authorization: `Bearer ${login.access_token}` } });
        return info.status === 401;
      });
      const res = await refresh(short, login.refresh_token);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.expires_in, 1);
    } finally {
      await short.stop();
    }
  });
});

describe('process', () => {
  it('exits cleanly on SIGTERM', async () => {
    const other = await startStandin();
    assert.equal(await other.stop(), 0);
  });

  it('refuses a realm file whose user names an unknown role, as an import would', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'standin-'));
    try {
      const realm = JSON.parse(await readFile(new URL('../../../deploy/keycloak/realm-agents.json', import.meta.url), 'utf8'));
      realm.users[0].realmRoles.push('no-such-role');
      const file = path.join(dir, 'realm.json');
      await writeFile(file, JSON.stringify(realm));
      await assert.rejects(startStandin({ STANDIN_REALM_FILE: file }), /unknown realm role "no-such-role"/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
