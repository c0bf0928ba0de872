// A tool server that takes agentauth's agent tokens as they are: the MCP
// TypeScript SDK's requireBearerAuth with a jose verifier built from the
// published metadata alone (the README's sample; agent-oauth.test.mjs runs it).
import * as jose from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';

export async function startToolServer(issuer, resource) { // resource: this server's registered URL, the tokens' aud
  const iss = new URL(issuer);
  const md = await (await fetch(new URL('/.well-known/oauth-authorization-server' + iss.pathname.replace(/\/$/, ''), iss))).json();
  const jwks = jose.createRemoteJWKSet(new URL(md.jwks_uri));
  const verifier = {
    async verifyAccessToken(token) {
      try {
        const { payload } = await jose.jwtVerify(token, jwks, { issuer: md.issuer, audience: resource, typ: 'at+jwt' });
        return { token, clientId: payload.client_id, scopes: payload.scope.split(' '), expiresAt: payload.exp, resource: new URL(payload.aud) };
      } catch (e) { throw new InvalidTokenError(e.message); }
    },
  };
  const url = new URL(resource);
  const app = createMcpExpressApp({ host: url.hostname });
  app.post(url.pathname, requireBearerAuth({ verifier, requiredScopes: ['fs.read'], expectedResource: url }), async (req, res) => {
    const server = new McpServer({ name: 'fs', version: '1.0.0' });
    server.registerTool('fs.read', { description: 'read a file' }, async ({ authInfo }) =>
      ({ content: [{ type: 'text', text: JSON.stringify({ client: authInfo.clientId, scopes: authInfo.scopes }) }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return new Promise((resolve) => { const listener = app.listen(Number(url.port), url.hostname, () => resolve(listener)); });
}
