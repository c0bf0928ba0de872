import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import {
  AGENTAUTH, Browser, atHash, basic, formAction, pkcePair, postForm, refresh, startStandin, verify,
} from './helpers.mjs';

let s;
before(async () => { s = await startStandin(); });
after(async () => { await s?.stop(); });

function authUrl({ state, nonce, challenge, scope = 'openid', prompt } = {}) {
  const u = new URL(`${s.oidc}/auth`);
  u.search = new URLSearchParams({
    client_id: AGENTAUTH.id,
    redirect_uri: AGENTAUTH.redirect,
    response_type: 'code',
    scope,
    ...(state ? { state } : {}),
    ...(nonce ? { nonce } : {}),
    ...(challenge ? { code_challenge: challenge, code_challenge_method: 'S256' } : {}),
    ...(prompt ? { prompt } : {}),
  }).toString();
  return u.href;
}

function exchange(code, verifier) {
  // client_secret_post here; the password-grant tests use Basic.
  return postForm(`${s.oidc}/token`, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: AGENTAUTH.redirect,
    code_verifier: verifier,
    client_id: AGENTAUTH.id,
    client_secret: AGENTAUTH.secret,
  });
}

// GET auth -> login form -> POST credentials -> redirects -> code.
async function browserLogin(browser, username, password, extra = {}) {
  const state = randomBytes(8).toString('hex');
  const nonce = randomBytes(8).toString('hex');
  const { verifier, challenge } = pkcePair();
  const page = await browser.follow(authUrl({
    state, nonce, challenge, ...extra,
  }), { stopAt: AGENTAUTH.redirect });
  return {
    state, nonce, verifier, page,
  };
}

describe('authorization code flow with the login page', () => {
  it('logs in through the HTML form and exchanges the code with PKCE', async () => {
    const browser = new Browser();
    const {
      state, nonce, verifier, page,
    } = await browserLogin(browser, 'carol', 'carol-pw');
    assert.equal(page.status, 200);
    assert.match(page.text, /<form id="kc-form-login"/);
    assert.match(page.text, /id="username"/);
    assert.match(page.text, /id="password"/);
    assert.match(page.text, /id="kc-login"/);
    assert.doesNotMatch(page.text, /id="input-error"/);
    assert.match(page.url, /\/realms\/agents\/login-actions\/authenticate\?/);
    const action = formAction(page.text);
    assert.ok(action.startsWith(`${s.issuer}/login-actions/authenticate?`), action);

    const wrong = await browser.follow(action, { method: 'POST', form: { username: 'carol', password: 'nope' } });
    assert.equal(wrong.status, 200);
    assert.match(wrong.text, /id="input-error"[^>]*>Invalid username or password\.</);
    assert.match(wrong.text, /value="carol"/);

    const done = await browser.follow(formAction(wrong.text), {
      method: 'POST', form: { username: 'carol', password: 'carol-pw' }, stopAt: AGENTAUTH.redirect,
    });
    assert.ok(done.location?.startsWith(AGENTAUTH.redirect), `ended at ${done.status} ${done.location}`);
    const cb = new URL(done.location);
    assert.equal(cb.searchParams.get('state'), state);
    assert.equal(cb.searchParams.get('iss'), s.issuer);
    const code = cb.searchParams.get('code');
    assert.ok(code);

    const res = await exchange(code, verifier);
    assert.equal(res.status, 200, res.text);
    const t = res.json;
    assert.equal(t.token_type, 'Bearer');
    assert.ok(t.refresh_token);
    assert.equal(t.scope, 'openid profile email');
    const id = await verify(s, t.id_token);
    const at = await verify(s, t.access_token);
    assert.equal(id.payload.nonce, nonce);
    assert.equal(id.payload.typ, 'ID');
    assert.equal(id.payload.aud, 'agentauth');
    assert.equal(id.payload.azp, 'agentauth');
    assert.equal(id.payload.at_hash, atHash(t.access_token));
    assert.equal(id.payload.sid, t.session_state);
    assert.equal(at.payload.sid, t.session_state);
    assert.equal(at.payload.typ, 'Bearer');
    assert.ok([].concat(at.payload.aud).includes('agentauth'));
    for (const p of [id.payload, at.payload]) {
      assert.equal(p.preferred_username, 'carol');
      assert.ok(p.realm_access.roles.includes('lead'), 'lead via group /leads');
    }

    // Refresh keeps the session.
    const r = await refresh(s, t.refresh_token);
    assert.equal(r.status, 200, r.text);
    assert.equal((await verify(s, r.json.id_token)).payload.sid, t.session_state);

    // Single sign-on: a second authorization request needs no form.
    const again = pkcePair();
    const sso = await browser.follow(authUrl({ state: 'x', nonce: 'y', challenge: again.challenge }), { stopAt: AGENTAUTH.redirect });
    assert.ok(sso.location?.startsWith(AGENTAUTH.redirect), `SSO ended at ${sso.status}`);
    const code2 = new URL(sso.location).searchParams.get('code');
    const t2 = (await exchange(code2, again.verifier)).json;
    assert.equal(t2.session_state, t.session_state);

    // A code works once; replaying it also drops what was issued for it
    // (Keycloak detaches the client session on a reused code).
    const replay = await exchange(code2, again.verifier);
    assert.equal(replay.status, 400);
    assert.equal(replay.json.error, 'invalid_grant');
    assert.equal((await refresh(s, t2.refresh_token)).status, 400);
  });

  it('rejects a wrong PKCE verifier and a missing challenge', async () => {
    const browser = new Browser();
    const { page } = await browserLogin(browser, 'bob', 'bob-pw');
    const done = await browser.follow(formAction(page.text), {
      method: 'POST', form: { username: 'bob', password: 'bob-pw' }, stopAt: AGENTAUTH.redirect,
    });
    const code = new URL(done.location).searchParams.get('code');
    const res = await exchange(code, pkcePair().verifier);
    assert.equal(res.status, 400);
    assert.equal(res.json.error, 'invalid_grant');

    const noPkce = await new Browser().follow(authUrl({ state: 's' }), { stopAt: AGENTAUTH.redirect });
    const err = new URL(noPkce.location);
    assert.equal(err.searchParams.get('error'), 'invalid_request');
  });

  it('refuses an unregistered redirect URI without redirecting', async () => {
    const u = new URL(authUrl({ challenge: pkcePair().challenge }));
    u.searchParams.set('redirect_uri', 'http://evil.example/cb');
    const res = await new Browser().follow(u.href);
    assert.equal(res.status, 400);
  });

  it('browser logout with id_token_hint redirects and ends the session', async () => {
    const browser = new Browser();
    const { verifier, page } = await browserLogin(browser, 'alice', 'alice-pw');
    const done = await browser.follow(formAction(page.text), {
      method: 'POST', form: { username: 'alice', password: 'alice-pw' }, stopAt: AGENTAUTH.redirect,
    });
    const t = (await exchange(new URL(done.location).searchParams.get('code'), verifier)).json;

    const bad = new URL(`${s.oidc}/logout`);
    bad.search = new URLSearchParams({ id_token_hint: t.id_token, post_logout_redirect_uri: 'http://evil.example/' }).toString();
    assert.equal((await browser.request(bad.href)).status, 400);

    const u = new URL(`${s.oidc}/logout`);
    u.search = new URLSearchParams({
      id_token_hint: t.id_token, post_logout_redirect_uri: 'http://127.0.0.1:18080/', state: 'bye',
    }).toString();
    const out = await browser.request(u.href);
    assert.equal(out.status, 302);
    assert.equal(out.location, 'http://127.0.0.1:18080/?state=bye');

    const r = await refresh(s, t.refresh_token);
    assert.equal(r.status, 400);
    assert.equal(r.json.error, 'invalid_grant');
    // The browser session is gone: the next login shows the form again.
    const next = await browser.follow(authUrl({ challenge: pkcePair().challenge }), { stopAt: AGENTAUTH.redirect });
    assert.equal(next.status, 200);
    assert.match(next.text, /kc-form-login/);
  });

  it('browser logout without id_token_hint asks for confirmation', async () => {
    const res = await fetch(`${s.oidc}/logout`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /id="kc-logout"/);
    const code = html.match(/name="session_code" value="([^"]+)"/)[1];
    const confirm = await postForm(`${s.oidc}/logout/logout-confirm`, { session_code: code });
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /You are logged out/);
  });

  it('password-grant client credentials are checked at the token endpoint for codes too', async () => {
    const res = await postForm(`${s.oidc}/token`, {
      grant_type: 'authorization_code', code: 'whatever', redirect_uri: AGENTAUTH.redirect,
    }, { authorization: basic(AGENTAUTH.id, 'wrong') });
    assert.equal(res.status, 401);
  });
});
