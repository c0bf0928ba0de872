// An MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/server
// 2.4.0, createMcpHandler: MCP 2026-07-28, and 2025 clients served
// statelessly), behind agentauth's gateway in e2e/mcpmatrix_test.go. It
// offers fs.read, fs.write, fs.delete and secret.tool, refuses any request
// without the gateway's credential (CREDENTIAL), and prints one JSON line
// per line of its life on stdout: {"listening": port} first, then
// {"ran": "<tool> <path>", "era": "modern" or "legacy"} for each call it
// runs: the era the SDK served it in.
import { createServer } from 'node:http';
import { McpServer, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server';

const credential = `Bearer ${process.env.CREDENTIAL}`;
const say = (line) => console.log(JSON.stringify(line));

const handler = createMcpHandler((ctx) => {
  const server = new McpServer({ name: 'ts-fs-upstream', version: '1.0.0' });
  for (const name of ['fs.read', 'fs.write', 'fs.delete', 'secret.tool']) {
    server.registerTool(name, {
      description: `test tool ${name}`,
      inputSchema: fromJsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
    }, async ({ path }) => {
      say({ ran: `${name} ${path}`, era: ctx.era });
      return { content: [{ type: 'text', text: `${name} ran on ${path}` }] };
    });
  }
  return server;
});

// Node's http server in front of the handler's fetch face.
const http = createServer(async (req, res) => {
  if (req.headers.authorization !== credential) {
    res.writeHead(401).end('unauthorized');
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? Buffer.concat(chunks) : undefined;
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method, headers: req.headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
  });
  const response = await handler.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body) {
    for await (const chunk of response.body) res.write(chunk);
  }
  res.end();
});
http.listen(0, '127.0.0.1', () => say({ listening: http.address().port }));
