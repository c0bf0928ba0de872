// One official TypeScript SDK client through agentauth's MCP gateway, for a
// cell of the matrix of e2e/mcpmatrix_test.go. MODE picks it:
//   sdk1    @modelcontextprotocol/sdk 1.32.2 (MCP 2025 only)
//   legacy  @modelcontextprotocol/client 2.4.0, versionNegotiation 'legacy'
//   auto    @modelcontextprotocol/client 2.4.0, versionNegotiation 'auto'
//   pin     @modelcontextprotocol/client 2.4.0, versionNegotiation { pin: '2026-07-28' }
// It prints one JSON line per step on stdout ({"step": …, …}). A call that
// asks is decided by the Go test: a 2025 client's is held by the gateway
// (the test decides it on "held"); a 2026 client gets the approval's URL
// to open (it prints "elicit" with the URL and waits for a line on stdin,
// the test's word that it was decided, then accepts, and the SDK retries).
//
// Environment: MCP_URL (the gateway resource), TOKEN (an agent token), MODE,
// PREFIX (of every path the calls name, so that the server's record tells
// the cells apart).
import { createInterface } from 'node:readline';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.env.MCP_URL);
const mode = process.env.MODE;
const p = (path) => `${process.env.PREFIX}${path}`;
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));
const failure = (e) => ({ error: { code: e.code ?? null, message: String(e.message ?? e), reason: e.data?.reason_code ?? null } });
const init = { requestInit: { headers: { Authorization: `Bearer ${process.env.TOKEN}` } } };

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

let client;
if (mode === 'sdk1') {
  client = new Client1({ name: 'matrix-sdk1', version: '1.0.0' });
  await client.connect(new Transport1(url, init));
  say('connected', { version: client.transport?.protocolVersion ?? null });
} else {
  const versionNegotiation = { mode: { legacy: 'legacy', auto: 'auto', pin: { pin: '2026-07-28' } }[mode] };
  client = new Client({ name: `matrix-${mode}`, version: '1.0.0' }, { capabilities: { elicitation: { url: {} } }, versionNegotiation });
  client.setRequestHandler('elicitation/create', async (req) => {
    say('elicit', { url: req.params.url, mode: req.params.mode });
    await lines.next(); // decided
    return { action: 'accept' };
  });
  await client.connect(new StreamableHTTPClientTransport(url, init));
  say('connected', { version: client.getNegotiatedProtocolVersion() ?? null });
}

say('tools', { names: (await client.listTools()).tools.map((t) => t.name).sort() });

const call = async (step, name, args, options = { timeout: 120000 }) => {
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, options);
    say(step, { text: r.content?.[0]?.text ?? null, isError: r.isError ?? false });
  } catch (e) {
    say(step, failure(e));
  }
};
await call('allowed', 'fs.read', { path: p('/a') });
await call('denied', 'fs.delete', { path: p('/d') });
say('held', { verdict: 'approve' });
await call('approved', 'fs.write', { path: p('/approve') });
say('held', { verdict: 'reject' });
await call('rejected', 'fs.write', { path: p('/reject') });
if (mode === 'sdk1') {
  // The SDK's request timeout, shortened: the client gives up on a held
  // call (notifications/cancelled, then it closes the stream).
  say('held', { verdict: 'none' });
  await call('gave-up', 'fs.write', { path: p('/gave-up') }, { timeout: 2000 });
  await lines.next(); // the test saw the call withdrawn: the client may go
}
await client.close();
process.exit(0);
