// One realm served at Keycloak's URLs: an oidc-provider instance for the
// OpenID Connect core (authorization endpoint, code and refresh grants,
// discovery, JWKS, PKCE, sessions) plus the Keycloak behaviours oidc-provider
// does not have: the password grant, Keycloak-shaped tokens and token
// responses, userinfo/introspection/revocation of JWT access tokens, logout
// with a refresh token, and the login page at login-actions/authenticate.

import { randomUUID, randomBytes, timingSafeEqual } from 'node:crypto';
import * as jose from 'jose';
import { Provider, errors } from 'oidc-provider';

import { adapterFor, Store } from './adapter.mjs';
import { KeyRing, publicKeyBase64 } from './keys.mjs';
import {
  bearerToken, clientCredentials, encodeForm, isForm, parseForm, readBody,
  redirect, replayRequest, sendEmpty, sendHtml, sendJson,
} from './http.mjs';
import {
  errorPage, infoPage, loginPage, logoutConfirmPage,
} from './pages.mjs';

export const OIDC = '/protocol/openid-connect';

const epoch = () => Math.floor(Date.now() / 1000);

const INVALID_CLIENT = 'Invalid client or Invalid client credentials';

function secretsEqual(a, b) {
  const x = Buffer.from(String(a));
  const y = Buffer.from(String(b));
  return x.length === y.length && timingSafeEqual(x, y);
}

// An error oidc-provider renders as {"error","error_description"} with the
// given HTTP status.
function kcError(status, error, description) {
  const err = new errors.CustomOIDCProviderError(error, description);
  err.status = status;
  err.statusCode = status;
  return err;
}

function appendQuery(uri, params) {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, v);
  }
  return u.href;
}

export class RealmServer {
  constructor({
    realm, origin, accessTokenTtl, log = () => {},
  }) {
    this.realm = realm;
    this.origin = origin;
    this.prefix = `/realms/${encodeURIComponent(realm.name)}`;
    this.issuer = `${origin}${this.prefix}`;
    // oidc-provider issues JWT access tokens only for a resource server; every
    // token request is defaulted to this one.
    this.resource = `urn:keycloak-standin:realm:${realm.name}`;
    this.accessTokenTtl = accessTokenTtl || realm.accessTokenLifespan;
    this.log = log;
    this.keys = new KeyRing();
    this.store = new Store();
    this.cookieKeys = [randomBytes(32).toString('base64url')];
    this.sessions = new Map(); // sid -> { userId, started, clients, grants }
    this.endedSessions = new Set();
    this.revokedAccessTokens = new Map(); // jti -> exp
    this.pendingLogouts = new Map(); // session_code -> { redirect, state, exp }
    this.sentLogoutTokens = []; // back-channel logouts sent: { clientId, url, sid, sub, status, token }
    this.atInfo = new WeakMap(); // AccessToken model -> { sid, kcScope }
    this.build();
  }

  // ---- oidc-provider instance ---------------------------------------------

  scopesSupported() {
    return ['openid', ...new Set(['offline_access', ...this.realm.clientScopes.keys()])];
  }

  resourceServerInfo() {
    return {
      scope: this.scopesSupported().join(' '),
      audience: 'account', // replaced by the audience mappers' result
      accessTokenTTL: this.accessTokenTtl,
      accessTokenFormat: 'jwt',
      jwt: { sign: { alg: 'RS256' } },
    };
  }

  providerClients() {
    const out = [];
    for (const c of this.realm.clients.values()) {
      if (!c.enabled || c.bearerOnly || c.builtin) continue;
      const grantTypes = [];
      if (c.standardFlowEnabled) grantTypes.push('authorization_code');
      if (c.directAccessGrantsEnabled) grantTypes.push('password');
      if (grantTypes.length) grantTypes.push('refresh_token');
      out.push({
        client_id: c.clientId,
        ...(c.publicClient ? { token_endpoint_auth_method: 'none' } : {
          client_secret: c.secret,
          token_endpoint_auth_method: 'client_secret_basic',
        }),
        redirect_uris: c.standardFlowEnabled ? c.redirectUris.filter((u) => !u.includes('*')) : [],
        response_types: c.standardFlowEnabled ? ['code'] : [],
        grant_types: grantTypes,
        id_token_signed_response_alg: 'RS256',
      });
    }
    return out;
  }

  build() {
    const self = this;
    const { realm } = this;
    const scopes = this.scopesSupported();

    const provider = new Provider(this.issuer, {
      adapter: adapterFor(this.store),
      clients: this.providerClients(),
      clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
      jwks: { keys: this.keys.keys },
      cookies: { keys: this.cookieKeys },
      findAccount: async (ctx, sub) => {
        const user = realm.userById(sub);
        if (!user || !user.enabled) return undefined;
        return { accountId: sub, claims: async () => ({ sub }) };
      },
      // Keycloak-specific claims are added by the protocol-mapper engine
      // (realm.mjs), not by oidc-provider's claim filtering.
      claims: { openid: ['sub'] },
      scopes,
      responseTypes: ['code'],
      pkce: {
        required: (ctx, client) => realm.client(client.clientId)?.attributes['pkce.code.challenge.method'] === 'S256',
      },
      features: {
        devInteractions: { enabled: false },
        introspection: { enabled: false },
        revocation: { enabled: false },
        userinfo: { enabled: false },
        rpInitiatedLogout: { enabled: false },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => self.resource,
          useGrantedResource: () => true,
          getResourceServerInfo: (ctx, resourceIndicator) => {
            if (resourceIndicator !== self.resource) throw new errors.InvalidTarget();
            return self.resourceServerInfo();
          },
        },
      },
      interactions: {
        url: (ctx, interaction) => `${self.prefix}/login-actions/authenticate?${new URLSearchParams({
          session_code: interaction.uid,
          client_id: interaction.params.client_id,
          tab_id: randomBytes(8).toString('base64url'),
        })}`,
      },
      routes: {
        authorization: `${OIDC}/auth`,
        token: `${OIDC}/token`,
        jwks: `${OIDC}/certs`,
        userinfo: `${OIDC}/userinfo`,
        introspection: `${OIDC}/token/introspect`,
        revocation: `${OIDC}/revoke`,
        end_session: `${OIDC}/logout`,
        pushed_authorization_request: `${OIDC}/ext/par/request`,
      },
      ttl: {
        AccessToken: () => self.accessTokenTtl,
        IdToken: () => self.accessTokenTtl,
        AuthorizationCode: realm.accessCodeLifespan,
        Interaction: realm.accessCodeLifespanLogin,
        RefreshToken: () => realm.ssoSessionIdleTimeout,
        Session: realm.ssoSessionMaxLifespan,
        Grant: realm.ssoSessionMaxLifespan,
      },
      // Keycloak always issues a refresh token, and by default answers a
      // refresh with a token that leaves the old one usable.
      issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: false,
      clientBasedCORS: (ctx, origin, client) => {
        const c = realm.client(client.clientId);
        return Boolean(c && (c.webOrigins.includes('*') || realm.allowedOrigins(c).includes(origin)));
      },
      formats: {
        customizers: { jwt: (ctx, token, jwt) => self.customizeAccessToken(token, jwt) },
      },
      discovery: {
        userinfo_endpoint: `${this.issuer}${OIDC}/userinfo`,
        introspection_endpoint: `${this.issuer}${OIDC}/token/introspect`,
        introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        revocation_endpoint: `${this.issuer}${OIDC}/revoke`,
        revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        end_session_endpoint: `${this.issuer}${OIDC}/logout`,
        userinfo_signing_alg_values_supported: ['none'],
      },
      renderError: async (ctx, out) => {
        ctx.type = 'html';
        ctx.body = errorPage(realm, out.error_description || out.error);
      },
    });

    provider.registerGrantType('password', (ctx, next) => self.passwordGrant(ctx, next), ['username', 'password', 'scope']);

    // Shape every ID token like Keycloak's (typ, azp, sid, at_hash, mapped claims).
    const { payload } = provider.IdToken.prototype;
    provider.IdToken.prototype.payload = async function keycloakIdTokenPayload(...args) {
      const base = await payload.apply(this, args);
      return self.idTokenClaims(this, base);
    };

    // Keycloak's token response members.
    provider.use(async (ctx, next) => {
      await next();
      self.finishTokenResponse(ctx);
    });

    provider.on('server_error', (ctx, err) => this.log(`server_error ${ctx.method} ${ctx.path}: ${err.stack || err}`));

    this.provider = provider;
    this.callback = provider.callback();
  }

  rotateKeys({ dropOld = false } = {}) {
    const key = this.keys.rotate({ dropOld });
    this.build();
    return { realm: this.realm.name, kid: key.kid, kids: this.keys.keys.map((k) => k.kid) };
  }

  // ---- Keycloak-shaped tokens ---------------------------------------------

  customizeAccessToken(token, jwt) {
    const client = this.realm.client(token.clientId);
    const user = this.realm.userById(token.accountId);
    if (!client || !user) return;
    const sid = token.sessionUid || token.sid;
    const { claims, audience } = this.realm.mapClaims('access', user, client, token.scope);
    const kcScope = this.realm.tokenScope(client, token.scope);
    const p = jwt.payload;
    const out = {
      exp: p.exp,
      iat: p.iat,
      jti: randomUUID(),
      iss: p.iss,
      // oidc-provider refuses a JWT access token without aud; Keycloak would
      // omit it. With the realm file's audience mapper this never happens.
      aud: audience.length === 1 ? audience[0] : (audience.length ? audience : client.clientId),
      sub: user.id,
      typ: 'Bearer',
      azp: client.clientId,
    };
    if (sid) out.sid = sid;
    for (const k of ['acr', 'allowed-origins', 'realm_access', 'resource_access']) {
      if (k in claims) out[k] = claims[k];
    }
    out.scope = kcScope;
    for (const [k, v] of Object.entries(claims)) {
      if (!(k in out)) out[k] = v;
    }
    jwt.header = { typ: 'JWT' };
    jwt.payload = out;
    this.atInfo.set(token, { sid, kcScope });
    this.touchSession(sid, user.id, client.clientId, token.grantId);
  }

  idTokenClaims(idToken, base) {
    const client = this.realm.client(idToken.client.clientId);
    const user = this.realm.userById(base.sub);
    if (!client || !user) return base;
    const entities = idToken.ctx?.oidc?.entities || {};
    const at = entities.AccessToken;
    const info = at ? this.atInfo.get(at) : undefined;
    const source = entities.RefreshToken || entities.AuthorizationCode;
    const sid = info?.sid || source?.sessionUid || base.sid;
    const scope = at?.scope ?? source?.scope ?? idToken.scope;
    const { claims } = this.realm.mapClaims('id', user, client, scope);
    const out = { jti: randomUUID(), typ: 'ID', azp: client.clientId };
    if (base.nonce) out.nonce = base.nonce;
    if (sid) out.sid = sid;
    if (base.at_hash) out.at_hash = base.at_hash; // the token itself here; hashed when signed
    for (const [k, v] of Object.entries(claims)) {
      if (!(k in out)) out[k] = v;
    }
    out.sub = user.id;
    return out;
  }

  finishTokenResponse(ctx) {
    const { body } = ctx;
    if (ctx.method !== 'POST' || ctx.status !== 200 || !body || typeof body !== 'object' || !body.access_token) return;
    if (ctx.path !== `${OIDC}/token`) return;
    const at = ctx.oidc?.entities?.AccessToken;
    const rt = ctx.oidc?.entities?.RefreshToken;
    const info = at ? this.atInfo.get(at) : undefined;
    const now = epoch();
    const rtExp = rt ? (rt.exp ?? now + rt.expiration) : undefined;
    const out = {
      access_token: body.access_token,
      expires_in: body.expires_in,
      refresh_expires_in: rt ? Math.max(0, rtExp - now) : 0,
      refresh_token: body.refresh_token,
      token_type: 'Bearer',
      id_token: body.id_token,
      'not-before-policy': 0,
      session_state: info?.sid,
      scope: info?.kcScope ?? body.scope,
    };
    ctx.body = Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
  }

  // ---- password grant (oidc-provider has none built in) -------------------

  async passwordGrant(ctx, next) {
    const { provider } = this;
    const { client, params } = ctx.oidc;
    const kcClient = this.realm.client(client.clientId);
    if (!kcClient?.directAccessGrantsEnabled) {
      throw kcError(400, 'unauthorized_client', 'Client not allowed for direct access grants');
    }
    const requested = [...new Set(String(params.scope || '').split(' ').filter(Boolean))];
    const allowed = new Set(['openid', ...kcClient.defaultClientScopes, ...kcClient.optionalClientScopes]);
    const invalid = requested.filter((s) => !allowed.has(s));
    if (invalid.length) throw kcError(400, 'invalid_scope', `Invalid scopes: ${params.scope}`);
    const user = this.realm.authenticate(params.username, params.password);
    if (!user) throw kcError(401, 'invalid_grant', 'Invalid user credentials');
    if (!user.enabled) throw kcError(400, 'invalid_grant', 'Account disabled');
    if (user.requiredActions.length) throw kcError(400, 'invalid_grant', 'Account is not fully set up');

    const scope = requested.join(' ');
    const sid = randomUUID();
    const authTime = epoch();
    this.startSession(sid, user.id);

    const grant = new provider.Grant({ accountId: user.id, clientId: client.clientId });
    if (scope) {
      grant.addOIDCScope(scope);
      grant.addResourceScope(this.resource, scope);
    }
    const grantId = await grant.save();
    ctx.oidc.entity('Grant', grant);
    ctx.oidc.entity('Account', { accountId: user.id, claims: async () => ({ sub: user.id }) });

    const at = new provider.AccessToken({
      accountId: user.id, client, grantId, gty: 'password', sessionUid: sid, sid, expiresWithSession: false,
    });
    at.resourceServer = new provider.ResourceServer(this.resource, this.resourceServerInfo());
    at.scope = scope;
    ctx.oidc.entity('AccessToken', at);
    const accessToken = await at.save();

    let refreshToken;
    if (client.grantTypeAllowed('refresh_token')) {
      const rt = new provider.RefreshToken({
        accountId: user.id,
        client,
        grantId,
        gty: 'password',
        scope,
        resource: this.resource,
        sessionUid: sid,
        sid,
        authTime,
        rotations: 0,
        expiresWithSession: false,
      });
      ctx.oidc.entity('RefreshToken', rt);
      refreshToken = await rt.save();
    }

    let idToken;
    if (requested.includes('openid')) {
      const token = new provider.IdToken({ sub: user.id }, { ctx });
      token.scope = scope;
      token.set('sid', sid);
      token.set('at_hash', accessToken);
      idToken = await token.issue({ use: 'idtoken' });
    }

    ctx.body = {
      access_token: accessToken,
      expires_in: at.expiration,
      refresh_token: refreshToken,
      id_token: idToken,
      scope,
      token_type: 'Bearer',
    };
    await next();
  }

  // ---- user sessions ------------------------------------------------------
  // Keycloak binds every token to a user session (sid). Password-grant
  // sessions get a fresh UUID; code-flow sessions use oidc-provider's
  // browser session uid.

  startSession(sid, userId) {
    this.sessions.set(sid, {
      userId, started: epoch(), clients: new Set(), grants: new Set(),
    });
  }

  touchSession(sid, userId, clientId, grantId) {
    if (!sid || this.endedSessions.has(sid)) return;
    if (!this.sessions.has(sid)) this.startSession(sid, userId);
    const s = this.sessions.get(sid);
    s.clients.add(clientId);
    if (grantId) s.grants.add(grantId);
  }

  sessionActive(sid) {
    return Boolean(sid) && this.sessions.has(sid) && !this.endedSessions.has(sid);
  }

  // Ends a user session: its grants are destroyed (no refresh, no new code
  // exchange) and the browser session, if any, is dropped. Refresh tokens are
  // kept on record so a later use answers "Session not active" as Keycloak does.
  async endSession(sid) {
    if (!sid) return;
    const s = this.sessions.get(sid);
    this.endedSessions.add(sid);
    this.sessions.delete(sid);
    for (const grantId of s?.grants || []) this.store.delete('Grant', grantId);
    const browser = await this.provider.Session.findByUid(sid);
    if (browser) {
      for (const a of Object.values(browser.authorizations || {})) {
        if (a.grantId) this.store.delete('Grant', a.grantId);
      }
      await browser.destroy();
    }
    if (s) await this.backchannelLogout(sid, s);
  }

  // Every session of a user ends (admin POST users/{id}/logout).
  async endUserSessions(userId) {
    const sids = [...this.sessions].filter(([, s]) => s.userId === userId).map(([sid]) => sid);
    for (const sid of sids) await this.endSession(sid);
    return sids.length;
  }

  // Like Keycloak, tell each client of the ended session that has a
  // back-channel logout URL (client attribute backchannel.logout.url), with
  // a logout token (OpenID Connect Back-Channel Logout 1.0), and wait for
  // its answer. The sid is included when the client asks for it
  // (backchannel.logout.session.required, Keycloak's default "true").
  // Keycloak (26.7) skips a client with frontchannelLogout on: it is told
  // through the browser instead, never by a back-channel call.
  async backchannelLogout(sid, s) {
    for (const clientId of s.clients) {
      const client = this.realm.client(clientId);
      const url = client?.attributes?.['backchannel.logout.url'];
      if (!url || client.frontchannelLogout) continue;
      const withSid = (client.attributes['backchannel.logout.session.required'] ?? 'true') === 'true';
      const token = await this.signLogoutToken({ aud: clientId, sub: s.userId, ...(withSid ? { sid } : {}) });
      let status = 0;
      try {
        const resp = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ logout_token: token }),
          signal: AbortSignal.timeout(5000),
        });
        status = resp.status;
      } catch (err) {
        this.log(`back-channel logout of ${clientId} at ${url} failed: ${err.message}`);
      }
      this.sentLogoutTokens.push({
        clientId, url, sid, sub: s.userId, status, token,
      });
    }
  }

  // A logout token as Keycloak signs it: typ "Logout", the back-channel
  // logout event, a jti, and no nonce.
  async signLogoutToken(claims) {
    const key = this.keys.current;
    const now = epoch();
    return new jose.SignJWT({
      ...claims,
      typ: 'Logout',
      events: { 'http://schemas.openid.net/event/backchannel-logout': {}, revoke_offline_access: false },
    })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + 120)
      .setJti(randomUUID())
      .sign(await jose.importJWK(key, 'RS256'));
  }

  async browserSessionUid(req, res) {
    const session = await this.provider.Session.get({ req, res });
    return session?.accountId ? session.uid : undefined;
  }

  // ---- token verification -------------------------------------------------

  async verifyJwt(token, { ignoreExpiration = false } = {}) {
    const jwks = jose.createLocalJWKSet(this.keys.publicJwks());
    try {
      if (ignoreExpiration) {
        const { payload } = await jose.compactVerify(token, jwks, { algorithms: ['RS256'] });
        const claims = JSON.parse(new TextDecoder().decode(payload));
        return claims.iss === this.issuer ? claims : undefined;
      }
      const { payload } = await jose.jwtVerify(token, jwks, { issuer: this.issuer, algorithms: ['RS256'] });
      return payload;
    } catch {
      return undefined;
    }
  }

  // Payload of a valid, unrevoked access token of a live session.
  async verifyAccessToken(token) {
    if (!token) return undefined;
    const payload = await this.verifyJwt(token);
    if (!payload || payload.typ !== 'Bearer') return undefined;
    if (!this.sessionActive(payload.sid)) return undefined;
    if (this.revokedAccessTokens.has(payload.jti)) return undefined;
    return payload;
  }

  // ---- client authentication, Keycloak's answers -------------------------

  authenticateClient(req, form) {
    const cred = clientCredentials(req, form);
    const fail = (status, error, description) => ({ error: { status, body: { error, error_description: description } } });
    if (cred.malformed || !cred.clientId) return fail(401, 'invalid_client', INVALID_CLIENT);
    const client = this.realm.client(cred.clientId);
    if (!client || !client.enabled || client.builtin) return fail(401, 'invalid_client', INVALID_CLIENT);
    if (client.bearerOnly) return fail(400, 'unauthorized_client', 'Bearer-only not allowed');
    if (!client.publicClient) {
      if (cred.secret === undefined) return fail(401, 'unauthorized_client', 'Client secret not provided in request');
      if (!client.secret || !secretsEqual(cred.secret, client.secret)) return fail(401, 'unauthorized_client', INVALID_CLIENT);
    }
    return { client, method: cred.method };
  }

  // ---- request routing ----------------------------------------------------

  async handle(req, res, url) {
    const sub = url.pathname.slice(this.prefix.length);
    if (sub === '' || sub === '/') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
      return sendJson(res, 200, this.realmInfo());
    }
    if (sub === `${OIDC}/token`) {
      if (req.method === 'POST') return this.tokenEndpoint(req, res);
      return this.passToProvider(req, res);
    }
    if (sub === `${OIDC}/userinfo`) return this.userinfo(req, res);
    if (sub === `${OIDC}/token/introspect`) return this.introspect(req, res);
    if (sub === `${OIDC}/revoke`) return this.revoke(req, res);
    if (sub === `${OIDC}/logout` || sub.startsWith(`${OIDC}/logout/`)) return this.logout(req, res, url, sub);
    if (sub === '/login-actions/authenticate') return this.loginActions(req, res, url);
    return this.passToProvider(req, res);
  }

  // Hands a request to oidc-provider, mounted under the realm path. A body
  // already read here is replayed as a fresh stream.
  passToProvider(req, res, body) {
    const r = body === undefined ? req : replayRequest(req, body);
    r.originalUrl = req.url;
    r.url = req.url.slice(this.prefix.length) || '/';
    return this.callback(r, res);
  }

  realmInfo() {
    return {
      realm: this.realm.name,
      public_key: publicKeyBase64(this.keys.current),
      'token-service': `${this.issuer}${OIDC}`,
      'account-service': `${this.issuer}/account`,
      'tokens-not-before': 0,
    };
  }

  // Token endpoint: Keycloak's client-authentication and grant checks first,
  // then oidc-provider (code, refresh and the registered password grant).
  async tokenEndpoint(req, res) {
    if (!isForm(req)) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: 'Content-Type must be application/x-www-form-urlencoded' });
    }
    const form = parseForm(await readBody(req), ['resource']);
    const auth = this.authenticateClient(req, form);
    if (auth.error) return sendJson(res, auth.error.status, auth.error.body);
    const { client } = auth;
    if (auth.method === 'client_secret_basic') delete form.client_secret;
    const now = epoch();
    switch (form.grant_type) {
      case 'password':
        if (!client.directAccessGrantsEnabled) {
          return sendJson(res, 400, { error: 'unauthorized_client', error_description: 'Client not allowed for direct access grants' });
        }
        break;
      case 'authorization_code': {
        if (!client.standardFlowEnabled) {
          return sendJson(res, 400, { error: 'unauthorized_client', error_description: 'Client not allowed to exchange code' });
        }
        const code = form.code ? this.store.get('AuthorizationCode', form.code) : undefined;
        if (!code || code.exp <= now) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Code not valid' });
        break;
      }
      case 'refresh_token': {
        const rt = form.refresh_token ? this.store.get('RefreshToken', form.refresh_token) : undefined;
        if (!rt || rt.exp <= now) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Invalid refresh token' });
        if (rt.clientId !== client.clientId) {
          return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Invalid refresh token. Token client and authorized client don\'t match' });
        }
        if (!this.sessionActive(rt.sessionUid)) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Session not active' });
        break;
      }
      default:
        break;
    }
    return this.passToProvider(req, res, encodeForm(form));
  }

  async userinfo(req, res) {
    if (req.method !== 'GET' && req.method !== 'POST') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    const form = req.method === 'POST' && isForm(req) ? parseForm(await readBody(req)) : {};
    const fail = (status, error, description) => sendJson(res, status, { error, error_description: description }, {
      'www-authenticate': `Bearer realm="${this.realm.name}", error="${error}", error_description="${description}"`,
    });
    const token = bearerToken(req, form);
    if (!token) return fail(401, 'invalid_token', 'Token not provided');
    const payload = await this.verifyAccessToken(token);
    if (!payload) return fail(401, 'invalid_token', 'Token verification failed');
    if (!String(payload.scope || '').split(' ').includes('openid')) return fail(403, 'insufficient_scope', 'Missing openid scope');
    const user = this.realm.userById(payload.sub);
    const client = this.realm.client(payload.azp);
    if (!user || !user.enabled || !client) return fail(401, 'invalid_token', 'User not found');
    const { claims } = this.realm.mapClaims('userinfo', user, client, payload.scope);
    return sendJson(res, 200, { sub: user.id, ...claims });
  }

  async introspect(req, res) {
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    const form = isForm(req) ? parseForm(await readBody(req)) : {};
    const auth = this.authenticateClient(req, form);
    if (auth.error) return sendJson(res, auth.error.status, auth.error.body);
    if (auth.client.publicClient) return sendJson(res, 401, { error: 'invalid_request', error_description: 'Client not allowed.' });
    if (!form.token) return sendJson(res, 400, { error: 'invalid_request', error_description: 'Token not provided.' });
    return sendJson(res, 200, await this.introspectToken(form.token, auth.client));
  }

  async introspectToken(token, caller) {
    const inactive = { active: false };
    if (token.split('.').length === 3) {
      const p = await this.verifyJwt(token);
      if (!p || !['Bearer', 'ID'].includes(p.typ)) return inactive;
      if (!this.sessionActive(p.sid) || this.revokedAccessTokens.has(p.jti)) return inactive;
      const user = this.realm.userById(p.sub);
      if (!user || !user.enabled) return inactive;
      return {
        ...p, client_id: p.azp, username: user.username, token_type: p.typ === 'ID' ? 'ID' : 'Bearer', active: true,
      };
    }
    const rt = this.store.get('RefreshToken', token);
    if (!rt || rt.exp <= epoch() || !this.sessionActive(rt.sessionUid)) return inactive;
    const user = this.realm.userById(rt.accountId);
    const client = this.realm.client(rt.clientId) || caller;
    return {
      exp: rt.exp,
      iat: rt.iat,
      jti: rt.jti,
      iss: this.issuer,
      aud: this.issuer,
      sub: rt.accountId,
      typ: 'Refresh',
      azp: rt.clientId,
      sid: rt.sessionUid,
      scope: this.realm.tokenScope(client, rt.scope),
      client_id: rt.clientId,
      username: user?.username,
      token_type: 'Refresh',
      active: true,
    };
  }

  async revoke(req, res) {
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
    const form = isForm(req) ? parseForm(await readBody(req)) : {};
    const auth = this.authenticateClient(req, form);
    if (auth.error) return sendJson(res, auth.error.status, auth.error.body);
    if (!form.token) return sendJson(res, 400, { error: 'invalid_request', error_description: 'Token not provided' });
    if (form.token.split('.').length === 3) {
      const p = await this.verifyJwt(form.token);
      if (p && p.typ === 'Bearer' && p.azp === auth.client.clientId) this.revokedAccessTokens.set(p.jti, p.exp);
    } else {
      const rt = this.store.get('RefreshToken', form.token);
      if (rt && rt.clientId === auth.client.clientId) {
        // Revoking a refresh token ends this client's part of the session.
        this.store.revokeGrant(rt.grantId);
        this.sessions.get(rt.sessionUid)?.grants.delete(rt.grantId);
      }
    }
    return sendEmpty(res, 200);
  }

  // ---- logout -------------------------------------------------------------

  async logout(req, res, url, sub) {
    if (sub === `${OIDC}/logout/logout-confirm`) {
      if (req.method !== 'POST') return sendHtml(res, 405, errorPage(this.realm, 'Method not allowed'));
      const form = isForm(req) ? parseForm(await readBody(req)) : {};
      return this.logoutConfirmed(req, res, form);
    }
    if (sub !== `${OIDC}/logout`) return sendJson(res, 404, { error: 'Unable to find matching target resource method' });
    if (req.method === 'POST') {
      const form = isForm(req) ? parseForm(await readBody(req)) : {};
      if (form.refresh_token !== undefined) return this.refreshTokenLogout(req, res, form);
      return this.browserLogout(req, res, form);
    }
    if (req.method === 'GET') return this.browserLogout(req, res, Object.fromEntries(url.searchParams));
    return sendJson(res, 405, { error: 'HTTP 405 Method Not Allowed' });
  }

  // What gocloak's Logout sends: client credentials and the refresh token.
  async refreshTokenLogout(req, res, form) {
    const auth = this.authenticateClient(req, form);
    if (auth.error) return sendJson(res, auth.error.status, auth.error.body);
    const rt = form.refresh_token ? this.store.get('RefreshToken', form.refresh_token) : undefined;
    if (!rt || rt.exp <= epoch()) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Invalid refresh token' });
    if (rt.clientId !== auth.client.clientId) {
      return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Invalid refresh token. Token client and authorized client don\'t match' });
    }
    if (this.sessionActive(rt.sessionUid)) await this.endSession(rt.sessionUid);
    return sendEmpty(res, 204);
  }

  // RP-initiated (browser) logout: end_session_endpoint.
  async browserLogout(req, res, params) {
    const {
      id_token_hint: hintToken, post_logout_redirect_uri: redirectUri, state, client_id: clientIdParam,
    } = params;
    let hint;
    if (hintToken) {
      hint = await this.verifyJwt(hintToken, { ignoreExpiration: true });
      if (!hint || hint.typ !== 'ID') return sendHtml(res, 400, errorPage(this.realm, 'Invalid parameter: id_token_hint'));
      if (clientIdParam && hint.azp !== clientIdParam) {
        return sendHtml(res, 400, errorPage(this.realm, 'Parameter client_id different than the client for which ID Token was issued'));
      }
    }
    const clientId = clientIdParam || hint?.azp;
    const client = clientId ? this.realm.client(clientId) : undefined;
    if (clientId && !client) return sendHtml(res, 400, errorPage(this.realm, 'Invalid parameter: client_id'));
    if (redirectUri) {
      if (!client) return sendHtml(res, 400, errorPage(this.realm, 'Missing parameters: id_token_hint'));
      if (!this.realm.postLogoutRedirectAllowed(client, redirectUri)) {
        return sendHtml(res, 400, errorPage(this.realm, 'Invalid redirect uri'));
      }
    }
    if (!hint) {
      // Keycloak asks the user to confirm when it cannot tell who asked.
      const code = randomBytes(16).toString('base64url');
      this.pendingLogouts.set(code, { redirectUri, state, exp: epoch() + this.realm.accessCodeLifespanLogin });
      return sendHtml(res, 200, logoutConfirmPage(this.realm, { action: `${this.issuer}${OIDC}/logout/logout-confirm`, sessionCode: code }));
    }
    await this.endSession(hint.sid);
    const browserUid = await this.browserSessionUid(req, res);
    if (browserUid) await this.endSession(browserUid);
    return this.finishLogout(res, redirectUri, state);
  }

  async logoutConfirmed(req, res, form) {
    const pending = this.pendingLogouts.get(form.session_code);
    this.pendingLogouts.delete(form.session_code);
    if (!pending || pending.exp <= epoch()) {
      return sendHtml(res, 400, errorPage(this.realm, 'Logout failed: the logout request expired.'));
    }
    const browserUid = await this.browserSessionUid(req, res);
    if (browserUid) await this.endSession(browserUid);
    return this.finishLogout(res, pending.redirectUri, pending.state);
  }

  finishLogout(res, redirectUri, state) {
    if (redirectUri) return redirect(res, appendQuery(redirectUri, { state }));
    return sendHtml(res, 200, infoPage(this.realm, 'You are logged out', 'You are logged out'));
  }

  // ---- login page (the browser part of the code flow) ---------------------

  async loginActions(req, res, url) {
    let details;
    try {
      details = await this.provider.interactionDetails(req, res);
    } catch {
      return sendHtml(res, 400, errorPage(this.realm, 'Your login attempt timed out. Login will start from the beginning.'));
    }
    const action = `${this.issuer}/login-actions/authenticate?${url.searchParams}`;
    const { prompt } = details;
    if (prompt.name === 'consent') return this.autoConsent(req, res, details);
    if (prompt.name !== 'login') return sendHtml(res, 400, errorPage(this.realm, 'Unexpected login step'));
    if (req.method === 'GET') return sendHtml(res, 200, loginPage(this.realm, { action, username: details.params.login_hint || '' }));
    if (req.method !== 'POST') return sendHtml(res, 405, errorPage(this.realm, 'Method not allowed'));
    const form = isForm(req) ? parseForm(await readBody(req)) : {};
    const user = this.realm.authenticate(form.username, form.password);
    if (!user) {
      return sendHtml(res, 200, loginPage(this.realm, { action, username: form.username, error: 'Invalid username or password.' }));
    }
    if (!user.enabled) {
      return sendHtml(res, 200, loginPage(this.realm, { action, username: form.username, error: 'Account is disabled, contact your administrator.' }));
    }
    return this.provider.interactionFinished(req, res, { login: { accountId: user.id, amr: ['pwd'] } }, { mergeWithLastSubmission: false });
  }

  // Keycloak shows no consent screen unless the client asks for one
  // (consentRequired); the stand-in grants what was asked.
  async autoConsent(req, res, details) {
    const { provider } = this;
    const { prompt: { details: missing }, params, session } = details;
    const grant = (details.grantId && await provider.Grant.find(details.grantId))
      || new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  sweep() {
    this.store.sweep();
    const now = epoch();
    for (const [jti, exp] of this.revokedAccessTokens) if (exp <= now) this.revokedAccessTokens.delete(jti);
    for (const [code, p] of this.pendingLogouts) if (p.exp <= now) this.pendingLogouts.delete(code);
  }
}
