#!/usr/bin/env node
// keycloak-standin: imitates one Keycloak realm (plus a master realm with an
// admin user) at Keycloak's URLs, configured from a Keycloak realm export.
// See README.md for what it imitates and what it does not.
//
//   node server.mjs [--realm-file FILE] [--port PORT] [--service-url URL]
//
// Environment: STANDIN_REALM_FILE, STANDIN_PORT, STANDIN_SERVICE_URL,
// STANDIN_ACCESS_TOKEN_TTL
// (seconds), STANDIN_ADMIN_USER / STANDIN_ADMIN_PASSWORD (default admin/admin),
// STANDIN_LOG=1 (one line per request on stderr).

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { AdminApi } from './lib/admin.mjs';
import { sendJson } from './lib/http.mjs';
import { Realm, rebaseLoopbackUrls } from './lib/realm.mjs';
import { RealmServer } from './lib/realm-server.mjs';

const HOST = '127.0.0.1';
const here = path.dirname(fileURLToPath(import.meta.url));

function usage(code) {
  process.stderr.write('usage: node server.mjs [--realm-file FILE] [--port PORT] [--service-url URL]\n');
  process.exit(code);
}

function masterRealm(username, password) {
  const roleMapper = (name, type, claim) => ({
    name,
    protocol: 'openid-connect',
    protocolMapper: type,
    config: {
      'claim.name': claim, multivalued: 'true', 'access.token.claim': 'true', 'id.token.claim': 'false', 'jsonType.label': 'String',
    },
  });
  return {
    realm: 'master',
    displayName: 'Keycloak',
    accessTokenLifespan: 60,
    roles: { realm: [{ name: 'admin', description: '${role_admin}' }, { name: 'create-realm', description: '${role_create-realm}' }] },
    clientScopes: [
      {
        name: 'roles',
        attributes: { 'include.in.token.scope': 'false' },
        protocolMappers: [
          roleMapper('realm roles', 'oidc-usermodel-realm-role-mapper', 'realm_access.roles'),
          roleMapper('client roles', 'oidc-usermodel-client-role-mapper', 'resource_access.${client_id}.roles'),
          { name: 'audience resolve', protocolMapper: 'oidc-audience-resolve-mapper', config: {} },
        ],
      },
      {
        name: 'profile',
        attributes: { 'include.in.token.scope': 'true' },
        protocolMappers: [{
          name: 'username',
          protocolMapper: 'oidc-usermodel-attribute-mapper',
          config: {
            'user.attribute': 'username', 'claim.name': 'preferred_username', 'access.token.claim': 'true', 'id.token.claim': 'true',
          },
        }],
      },
      { name: 'email', attributes: { 'include.in.token.scope': 'true' }, protocolMappers: [] },
    ],
    clients: [{
      clientId: 'admin-cli',
      publicClient: true,
      standardFlowEnabled: false,
      directAccessGrantsEnabled: true,
      defaultClientScopes: ['roles', 'profile', 'email'],
    }],
    users: [{
      username,
      enabled: true,
      emailVerified: true,
      firstName: 'Admin',
      lastName: 'Istrator',
      credentials: [{ type: 'password', value: password, temporary: false }],
      realmRoles: ['admin', 'create-realm', 'default-roles-master'],
    }],
  };
}

function main() {
  let args;
  try {
    ({ values: args } = parseArgs({
      options: {
        'realm-file': { type: 'string' },
        port: { type: 'string' },
        'service-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    usage(2);
  }
  if (args.help) usage(0);

  const realmFile = path.resolve(args['realm-file'] || process.env.STANDIN_REALM_FILE
    || path.join(here, '../../deploy/keycloak/realm-agents.json'));
  const portText = args.port ?? process.env.STANDIN_PORT ?? '8080';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`invalid port ${portText}\n`);
    process.exit(2);
  }
  const ttlText = process.env.STANDIN_ACCESS_TOKEN_TTL;
  const accessTokenTtl = ttlText ? Number(ttlText) : undefined;
  if (ttlText && !(Number.isInteger(accessTokenTtl) && accessTokenTtl > 0)) {
    process.stderr.write(`invalid STANDIN_ACCESS_TOKEN_TTL ${ttlText}\n`);
    process.exit(2);
  }
  const verbose = process.env.STANDIN_LOG === '1';
  const log = (line) => process.stderr.write(`keycloak-standin: ${line}\n`);

  const serviceUrl = args['service-url'] || process.env.STANDIN_SERVICE_URL;

  let realm;
  let master;
  try {
    let rep = JSON.parse(fs.readFileSync(realmFile, 'utf8'));
    if (serviceUrl) rep = rebaseLoopbackUrls(rep, serviceUrl);
    realm = new Realm(rep);
    master = new Realm(masterRealm(process.env.STANDIN_ADMIN_USER || 'admin', process.env.STANDIN_ADMIN_PASSWORD || 'admin'));
  } catch (err) {
    process.stderr.write(`keycloak-standin: cannot load realm file ${realmFile}: ${err.message}\n`);
    process.exit(1);
  }
  if (realm.name === 'master') {
    process.stderr.write('keycloak-standin: the realm file must not be the master realm\n');
    process.exit(1);
  }

  const realms = new Map();
  let admin;
  let ready = false;

  async function route(req, res) {
    const url = new URL(req.url, `http://${HOST}`);
    const p = url.pathname;
    if (p.startsWith('/realms/')) {
      const name = decodeURIComponent(p.split('/')[2] || '');
      const rs = realms.get(name);
      if (!rs) return sendJson(res, 404, { error: 'Realm does not exist' });
      return rs.handle(req, res, url);
    }
    if (p.startsWith('/admin/realms/')) return admin.handle(req, res, url);
    if (p === '/standin/rotate-keys') {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'use POST' });
      const rs = realms.get(url.searchParams.get('realm') || realm.name);
      if (!rs) return sendJson(res, 404, { error: 'Realm does not exist' });
      return sendJson(res, 200, rs.rotateKeys({ dropOld: url.searchParams.get('drop_old') === 'true' }));
    }
    if (p === '/standin/logout-tokens') {
      if (req.method !== 'GET') return sendJson(res, 405, { error: 'use GET' });
      const rs = realms.get(url.searchParams.get('realm') || realm.name);
      if (!rs) return sendJson(res, 404, { error: 'Realm does not exist' });
      return sendJson(res, 200, { sent: rs.sentLogoutTokens });
    }
    if (p === '/health' || p === '/health/ready' || p === '/health/live') {
      return sendJson(res, 200, { status: 'UP', checks: [] });
    }
    return sendJson(res, 404, { error: 'Unable to find matching target resource method' });
  }

  const server = http.createServer((req, res) => {
    if (verbose) res.on('finish', () => log(`${req.method} ${req.originalUrl || req.url} -> ${res.statusCode}`));
    if (!ready) {
      sendJson(res, 503, { error: 'starting' });
      return;
    }
    Promise.resolve(route(req, res)).catch((err) => {
      log(`error on ${req.method} ${req.url}: ${err.stack || err}`);
      if (!res.headersSent) sendJson(res, err.status || 500, { error: 'unknown_error' });
      else res.destroy();
    });
  });

  server.on('error', (err) => {
    log(`cannot listen on ${HOST}:${port}: ${err.message}`);
    process.exit(1);
  });

  server.listen(port, HOST, () => {
    const origin = `http://${HOST}:${server.address().port}`;
    const agents = new RealmServer({
      realm, origin, accessTokenTtl, log,
    });
    const masterServer = new RealmServer({ realm: master, origin, log });
    realms.set(realm.name, agents);
    realms.set('master', masterServer);
    admin = new AdminApi({ realms, master: masterServer });
    setInterval(() => realms.forEach((rs) => rs.sweep()), 60_000).unref();
    ready = true;
    process.stdout.write(`keycloak-standin listening on ${agents.issuer}\n`);
  });

  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
