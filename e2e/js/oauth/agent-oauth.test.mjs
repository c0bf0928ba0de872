// Off-the-shelf OAuth, JOSE and MCP libraries against agentauth's agent
// tokens, with their documented calls and nothing renamed: openid-client
// (discovery, token exchange, introspection, errors), jose (the key set
// and RFC 9068 verification from the published metadata alone) and the
// MCP TypeScript SDK (requireBearerAuth in front of an MCP server, its
// client calling a tool). Run by e2e/agentoauth_test.go, which starts
// agentauth and passes, in the environment: AGENTAUTH_ISSUER, PARENT_TOKEN
// (an agent token for RESOURCE with fs.read and fs.write), TOOLSERVER_KEY
// (a credential holding tokens:introspect), RESOURCE (the registered
// tool server's URL, where this file's MCP server listens), OTHER_RESOURCE
// (another registered server) and OTHER_TOKEN (an agent token for it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import * as jose from 'jose';
import { startToolServer } from './tool-server.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = (name) => {
  const v = process.env[name];
  assert.ok(v, `${name} must be set (run through go test -tags e2e -run TestAgentTokensWithRealLibraries ./e2e/)`);
  return v;
};
const issuer = new URL(env('AGENTAUTH_ISSUER'));
const parent = env('PARENT_TOKEN');
const toolServerKey = env('TOOLSERVER_KEY');
const resource = env('RESOURCE');
const otherResource = env('OTHER_RESOURCE');
const otherToken = env('OTHER_TOKEN');
const tokenExchange = 'urn:ietf:params:oauth:grant-type:token-exchange';
const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token';

// RFC 8414 discovery: the agent holds no client credential; the subject
// token is its credential (token_endpoint_auth_methods_supported: none).
// allowInsecureRequests: the test serves plain http on 127.0.0.1.
const discover = (auth = client.None()) =>
  client.discovery(issuer, 'agent', undefined, auth, { algorithm: 'oauth2', execute: [client.allowInsecureRequests] });

// A tool server introspects with its own Bearer credential
// (introspection_endpoint_auth_methods_supported: bearer), through
// openid-client's ClientAuth hook.
const bearerAuth = (key) => (_as, _client, _body, headers) => { headers.set('authorization', `Bearer ${key}`); };

const exchange = (config, params) =>
  client.genericGrantRequest(config, tokenExchange, { subject_token: parent, subject_token_type: accessTokenType, ...params });

const verifyWithJose = async (token, audience = resource) => {
  const md = (await discover()).serverMetadata();
  const jwks = jose.createRemoteJWKSet(new URL(md.jwks_uri));
  return jose.jwtVerify(token, jwks, { issuer: md.issuer, audience, typ: 'at+jwt', requiredClaims: ['client_id', 'scope', 'jti'] });
};

test('openid-client discovers the issuer (RFC 8414)', async () => {
  const md = (await discover()).serverMetadata();
  assert.equal(md.issuer, issuer.href.replace(/\/$/, ''));
  assert.deepEqual(md.grant_types_supported, [tokenExchange]);
  assert.deepEqual(md.token_endpoint_auth_methods_supported, ['none']);
  assert.deepEqual(md.introspection_endpoint_auth_methods_supported, ['bearer']);
  for (const u of [md.jwks_uri, md.token_endpoint, md.introspection_endpoint]) assert.ok(u.startsWith(md.issuer + '/'), u);
});

test('jose verifies an agent token with the published key set (RFC 9068)', async () => {
  const { payload, protectedHeader } = await verifyWithJose(parent);
  assert.equal(protectedHeader.typ, 'at+jwt');
  assert.equal(payload.aud, resource);
  assert.equal(payload.scope, 'fs.read fs.write');
  assert.equal(payload.client_id, payload.act.sub);
  await assert.rejects(verifyWithJose(parent, otherResource), (e) => e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'aud');
});

test('openid-client exchanges a token (RFC 8693) with resource (RFC 8707) and scope', async () => {
  const config = await discover();
  const res = await exchange(config, { resource, scope: 'fs.read', requested_token_type: accessTokenType });
  assert.equal(res.token_type, 'bearer'); // openid-client lower-cases it
  assert.equal(res.scope, 'fs.read');
  assert.equal(res.issued_token_type, accessTokenType);
  const { payload } = await verifyWithJose(res.access_token);
  assert.equal(payload.scope, 'fs.read');
  assert.equal(payload.act.act.sub, (await verifyWithJose(parent)).payload.client_id);
});

test('openid-client reads RFC 6749 §5.2 errors', async () => {
  const config = await discover();
  const cases = [
    [{ scope: 'fs.delete' }, 'invalid_scope'],
    [{ resource: otherResource }, 'invalid_target'],
    [{ subject_token: 'not-a-token' }, 'invalid_grant'],
    [{ requested_token_type: 'urn:ietf:params:oauth:token-type:id_token' }, 'invalid_request'],
  ];
  for (const [params, code] of cases) {
    await assert.rejects(exchange(config, params), (e) => e instanceof client.ResponseBodyError && e.error === code && e.status === 400 &&
      typeof e.error_description === 'string', `${JSON.stringify(params)}: want ${code}`);
  }
  await assert.rejects(client.genericGrantRequest(config, 'client_credentials', {}),
    (e) => e instanceof client.ResponseBodyError && e.error === 'unsupported_grant_type');
});

test('parameters in the URL and repeated ones are refused', async () => {
  const md = (await discover()).serverMetadata();
  const form = new URLSearchParams({ grant_type: tokenExchange, subject_token: parent, subject_token_type: accessTokenType });
  let res = await fetch(`${md.token_endpoint}?${form}`, { method: 'POST' });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error, 'invalid_request');
  form.append('subject_token', parent);
  res = await fetch(md.token_endpoint, { method: 'POST', body: form });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error, 'invalid_request');
  res = await fetch(`${md.introspection_endpoint}?token=${parent}`, { method: 'POST', headers: { authorization: `Bearer ${toolServerKey}` } });
  assert.equal(res.status, 400);
});

test('openid-client introspects (RFC 7662) with the tool server\'s credential', async () => {
  const config = await discover(bearerAuth(toolServerKey));
  const res = await client.tokenIntrospection(config, parent);
  assert.equal(res.active, true);
  assert.equal(res.aud, resource);
  assert.equal(res.scope, 'fs.read fs.write');
  assert.equal(res.client_id, (await verifyWithJose(parent)).payload.client_id);
  assert.equal((await client.tokenIntrospection(config, 'not-a-token')).active, false);
  // No credential: 401 invalid_client with a Bearer challenge.
  const anonymous = await discover();
  await assert.rejects(client.tokenIntrospection(anonymous, parent), (e) => e.status === 401 || e.cause?.status === 401);
});

test('an MCP server with requireBearerAuth takes agent tokens as they are', async (t) => {
  const url = new URL(resource);
  const listener = await startToolServer(issuer.href, resource);
  t.after(() => new Promise((resolve) => listener.close(resolve)));

  const config = await discover();
  const child = await exchange(config, { resource, scope: 'fs.read' });
  const mcp = new Client({ name: 'agent', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${child.access_token}` } } }));
  const out = await mcp.callTool({ name: 'fs.read', arguments: {} });
  const who = JSON.parse(out.content[0].text);
  assert.deepEqual(who.scopes, ['fs.read']);
  assert.equal(who.client, (await verifyWithJose(child.access_token)).payload.client_id);
  await mcp.close();

  // Refusals by the SDK's middleware: no token, a token without the
  // scope, a token for another server.
  const post = (token) => fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  const writeOnly = await exchange(config, { resource, scope: 'fs.write' });
  for (const [name, token, status, code] of [
    ['no token', undefined, 401, 'invalid_token'],
    ['a token without fs.read', writeOnly.access_token, 403, 'insufficient_scope'],
    ['a token for another server', otherToken, 401, 'invalid_token'],
    ['not a token', 'x.y.z', 401, 'invalid_token'],
  ]) {
    const res = await post(token);
    assert.equal(res.status, status, name);
    assert.match(res.headers.get('www-authenticate'), new RegExp(`error="${code}"`), name);
  }
  assert.equal((await post(child.access_token)).status, 200);
});
