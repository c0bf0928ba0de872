// The official MCP TypeScript SDK (@modelcontextprotocol/sdk) as a client
// of agentauth's MCP gateway, run by e2e/mcpgateway_test.go. It prints one
// JSON line per step on stdout ({"step": …, …}); the Go test approves or
// rejects the held calls meanwhile and checks every line.
//
// Environment: MCP_URL (the gateway resource), TOKEN (an agent token for
// it), OTHER_TOKEN (an agent token for another server), KEY (a managed
// key of the session's owner) with SESSION and AGENT (the agent it names).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { extractResourceMetadataUrl, discoverOAuthProtectedResourceMetadata, selectResourceURL } from '@modelcontextprotocol/sdk/client/auth.js';

const url = new URL(process.env.MCP_URL);
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));
const failure = (e) => ({ error: { code: e.code ?? null, message: String(e.message ?? e), reason: e.data?.reason_code ?? null } });

function connect(token, extra = {}) {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}`, ...extra } } });
  const client = new Client({ name: 'agentauth-e2e-ts', version: '1.0.0' });
  return client.connect(transport).then(() => client);
}

// OAuth discovery as the SDK does it: the 401's resource_metadata, then
// the RFC 9728 document, whose resource must be this URL.
{
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: '{}' });
  const metadataUrl = extractResourceMetadataUrl(res);
  try {
    const doc = await discoverOAuthProtectedResourceMetadata(url, { resourceMetadataUrl: metadataUrl });
    const resource = await selectResourceURL(url, {}, doc);
    say('discovery', { status: res.status, metadataUrl: String(metadataUrl), resource: String(resource), authorizationServers: doc.authorization_servers });
  } catch (e) {
    say('discovery', { status: res.status, metadataUrl: String(metadataUrl), ...failure(e) });
  }
}

const client = await connect(process.env.TOKEN);
say('tools', { names: (await client.listTools()).tools.map((t) => t.name) });

const call = async (step, name, args) => {
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    say(step, { text: r.content?.[0]?.text ?? null, isError: r.isError ?? false });
  } catch (e) {
    say(step, failure(e));
  }
};
await call('allowed', 'fs.read', { path: '/a' });
await call('denied', 'fs.delete', { path: '/d' });
say('held', {}); // the Go test approves the next call
await call('approved', 'fs.write', { path: '/x' });
say('held-again', {}); // the Go test rejects the next call
await call('replayed', 'fs.write', { path: '/etc/passwd' });
await client.close();

try {
  const other = await connect(process.env.OTHER_TOKEN);
  say('other-server', { connected: true });
  await other.close();
} catch (e) {
  say('other-server', failure(e));
}

// A person's managed key, naming the agent it acts for; then without it.
try {
  const keyed = await connect(process.env.KEY, { 'X-Agentauth-Session': process.env.SESSION, 'X-Agentauth-Agent': process.env.AGENT });
  const names = (await keyed.listTools()).tools.map((t) => t.name);
  const r = await keyed.callTool({ name: 'fs.read', arguments: { path: '/k' } });
  say('managed-key', { names, text: r.content?.[0]?.text ?? null });
  await keyed.close();
} catch (e) {
  say('managed-key', failure(e));
}
try {
  const unnamed = await connect(process.env.KEY);
  say('managed-key-no-agent', { connected: true });
  await unnamed.close();
} catch (e) {
  say('managed-key-no-agent', failure(e));
}
