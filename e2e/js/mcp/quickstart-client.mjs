// The official MCP TypeScript SDK (@modelcontextprotocol/sdk) as the agent
// of go tool task quickstart:gateway, run by e2e/quickstart_test.go with
// what the quick start printed: MCP_URL (its "MCP endpoint") and TOKEN
// (its "Agent token"). One JSON line per step on stdout; the Go test
// approves the held write meanwhile, through the API.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL),
  { requestInit: { headers: { Authorization: `Bearer ${process.env.TOKEN}` } } });
const client = new Client({ name: 'agentauth-quickstart-e2e', version: '1.0.0' });
await client.connect(transport);
say('tools', { names: (await client.listTools()).tools.map((t) => t.name) });

// A held call waits for a person: the timeout is longer than the
// gateway's (gateway.askTimeout, 5 minutes), not the SDK's 60 s.
const call = async (step, name, args) => {
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 6 * 60_000 });
    say(step, { text: r.content?.[0]?.text ?? null, isError: r.isError ?? false });
  } catch (e) {
    say(step, { error: { code: e.code ?? null, message: String(e.message ?? e), reason: e.data?.reason_code ?? null } });
  }
};
await call('read', 'notes.read', { name: 'welcome' });
await call('delete', 'notes.delete', { name: 'welcome' });
say('held', {});
await call('write', 'notes.write', { name: 'todo', text: 'approve me' });
await call('read-back', 'notes.read', { name: 'todo' });
await client.close();
