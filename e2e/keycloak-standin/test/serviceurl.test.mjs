import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { rebaseLoopbackUrls } from '../lib/realm.mjs';
import {
  AGENTAUTH, Browser, pkcePair, startStandin,
} from './helpers.mjs';

describe('rebaseLoopbackUrls', () => {
  const rep = {
    clients: [{
      clientId: 'agentauth',
      redirectUris: ['http://127.0.0.1:18080/auth/callback', 'http://localhost:18080/auth/callback', 'https://app.example/cb'],
      webOrigins: ['http://127.0.0.1:18080', 'http://localhost:18080', '+'],
      attributes: {
        'post.logout.redirect.uris': 'http://127.0.0.1:18080/*##http://localhost:18080/*##+',
        'backchannel.logout.url': 'http://127.0.0.1:18080/auth/backchannel-logout',
      },
    }, { clientId: 'bare' }],
  };

  it('moves loopback URLs to the service port and leaves the rest', () => {
    const out = rebaseLoopbackUrls(rep, 'http://127.0.0.1:41234');
    assert.deepEqual(out.clients[0].redirectUris, ['http://127.0.0.1:41234/auth/callback', 'http://localhost:41234/auth/callback', 'https://app.example/cb']);
    assert.deepEqual(out.clients[0].webOrigins, ['http://127.0.0.1:41234', 'http://localhost:41234', '+']);
    assert.equal(out.clients[0].attributes['post.logout.redirect.uris'], 'http://127.0.0.1:41234/*##http://localhost:41234/*##+');
    assert.equal(out.clients[0].attributes['backchannel.logout.url'], 'http://127.0.0.1:41234/auth/backchannel-logout');
    assert.deepEqual(out.clients[1], { clientId: 'bare' });
    assert.equal(rep.clients[0].redirectUris[0], 'http://127.0.0.1:18080/auth/callback', 'the input is not changed');
  });

  for (const bad of ['https://127.0.0.1:1', 'http://10.0.0.1:80', 'http://127.0.0.1', 'not a url']) {
    it(`refuses ${bad}`, () => {
      assert.throws(() => rebaseLoopbackUrls(rep, bad));
    });
  }
});

describe('STANDIN_SERVICE_URL', () => {
  let s;
  before(async () => { s = await startStandin({ STANDIN_SERVICE_URL: 'http://127.0.0.1:41234' }); });
  after(async () => { await s?.stop(); });

  function authUrl(redirect) {
    const u = new URL(`${s.oidc}/auth`);
    u.search = new URLSearchParams({
      client_id: AGENTAUTH.id,
      redirect_uri: redirect,
      response_type: 'code',
      scope: 'openid',
      state: 's',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    }).toString();
    return u.href;
  }

  it('accepts the redirect URI on the service port', async () => {
    const res = await new Browser().request(authUrl('http://127.0.0.1:41234/auth/callback'));
    assert.equal(res.status, 303, 'redirects to the login page');
  });

  it('refuses the redirect URI the file names', async () => {
    const res = await new Browser().follow(authUrl(AGENTAUTH.redirect));
    assert.equal(res.status, 400);
  });
});
