// Test helpers: start the stand-in on a free port, call it, decode tokens,
// drive the browser login with a small cookie jar.

import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as jose from 'jose';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const AGENTAUTH = { id: 'agentauth', secret: 'agentauth-e2e-secret', redirect: 'http://127.0.0.1:18080/auth/callback' };
export const OTHER_APP = { id: 'other-app', secret: 'other-app-secret' };

// Starts `node server.mjs --port 0` and resolves once it prints its URL. A
// start that fails, or takes over a minute (a bound for a broken start: a
// busy machine took 15 s), kills the child, so that nothing outlives the
// test file and holds its runner open.
export async function startStandin(env = {}) {
  const child = spawn(process.execPath, [path.join(root, 'server.mjs'), '--port', '0'], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const issuer = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`stand-in did not start within 60 s: ${stderr}`));
    }, 60000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^keycloak-standin listening on (http:\/\/127\.0\.0\.1:\d+\/realms\/agents)\n/m);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`stand-in exited with ${code}: ${stderr}`));
    });
  });
  const origin = new URL(issuer).origin;
  return {
    issuer,
    origin,
    oidc: `${issuer}/protocol/openid-connect`,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode;
      const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
      child.kill('SIGTERM');
      return exited;
    },
  };
}

// until asks cond every 50 ms until it holds, and fails when within ms pass
// first (a bound for a broken run, never what a test measures).
export async function until(what, cond, within = 30000) {
  const deadline = Date.now() + within;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${within} ms`);
    await new Promise((r) => { setTimeout(r, 50); });
  }
}

export function basic(id, secret) {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

export async function postForm(url, fields, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

// gocloak's Login: password grant, scope=openid, client secret via Basic.
export function passwordLogin(s, username, password, client = AGENTAUTH, scope = 'openid') {
  return postForm(`${s.oidc}/token`, {
    grant_type: 'password', username, password, scope, client_id: client.id,
  }, { authorization: basic(client.id, client.secret) });
}

export function refresh(s, refreshToken, client = AGENTAUTH) {
  return postForm(`${s.oidc}/token`, {
    grant_type: 'refresh_token', refresh_token: refreshToken,
  }, { authorization: basic(client.id, client.secret) });
}

export function decode(jwt) {
  return { header: jose.decodeProtectedHeader(jwt), payload: jose.decodeJwt(jwt) };
}

export async function verify(s, jwt) {
  const jwks = jose.createRemoteJWKSet(new URL(`${s.oidc}/certs`), { cacheMaxAge: 0, cooldownDuration: 0 });
  const { payload, protectedHeader } = await jose.jwtVerify(jwt, jwks, { issuer: s.issuer });
  return { payload, header: protectedHeader };
}

export function atHash(accessToken) {
  const digest = createHash('sha256').update(accessToken).digest();
  return digest.subarray(0, 16).toString('base64url');
}

export function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

// A browser: follows nothing on its own, keeps cookies by name.
export class Browser {
  constructor() {
    this.cookies = new Map();
  }

  cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  store(res) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0\b/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(url, { method = 'GET', form } = {}) {
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: this.cookieHeader(),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form ? new URLSearchParams(form) : undefined,
    });
    this.store(res);
    return { status: res.status, location: res.headers.get('location'), text: await res.text() };
  }

  // Follows redirects until a response that is not a redirect, or one that
  // leaves for `stopAt` (the client's redirect URI). Returns the last response.
  async follow(url, { method = 'GET', form, stopAt } = {}) {
    let res = await this.request(url, { method, form });
    let current = url;
    for (let i = 0; i < 20 && res.status >= 300 && res.status < 400 && res.location; i += 1) {
      const next = new URL(res.location, current).href;
      if (stopAt && next.startsWith(stopAt)) return { ...res, location: next };
      current = next;
      res = await this.request(next);
    }
    return { ...res, url: current };
  }
}

// The login form's action URL from the HTML Keycloak (and the stand-in) renders.
export function formAction(html) {
  const m = html.match(/<form id="kc-form-login"[^>]*action="([^"]+)"/);
  return m ? m[1].replace(/&amp;/g, '&') : undefined;
}
