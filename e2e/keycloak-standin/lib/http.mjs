// Small HTTP helpers shared by the stand-in's own endpoints (the parts that
// oidc-provider does not serve itself).

import { Readable } from 'node:stream';

const BODY_LIMIT = 256 * 1024;

export async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > BODY_LIMIT) {
      throw Object.assign(new Error('request entity too large'), { status: 413 });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function isForm(req) {
  return /^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] || '');
}

export function isJson(req) {
  return /^application\/json\b/i.test(req.headers['content-type'] || '');
}

// Parses an urlencoded body into a plain object. A repeated key keeps its
// first value, except keys listed in `multi`, which become arrays.
export function parseForm(text, multi = []) {
  const out = {};
  for (const [key, value] of new URLSearchParams(text)) {
    if (multi.includes(key)) {
      (out[key] ||= []).push(value);
    } else if (!(key in out)) {
      out[key] = value;
    }
  }
  return out;
}

export function encodeForm(obj) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(obj)) {
    if (Array.isArray(value)) {
      value.forEach((v) => params.append(key, v));
    } else if (value !== undefined && value !== null) {
      params.append(key, value);
    }
  }
  return params.toString();
}

export function sendJson(res, status, body, headers = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendHtml(res, status, html, headers = {}) {
  res.writeHead(status, {
    'content-type': 'text/html;charset=utf-8',
    'cache-control': 'no-store, must-revalidate, max-age=0',
    'content-length': Buffer.byteLength(html),
    ...headers,
  });
  res.end(html);
}

export function sendEmpty(res, status, headers = {}) {
  res.writeHead(status, { 'content-length': 0, ...headers });
  res.end();
}

export function redirect(res, location, status = 302, headers = {}) {
  sendEmpty(res, status, { location, ...headers });
}

// Client credentials from an HTTP Basic header (client_secret_basic, values
// form-urlencoded as RFC 6749 2.3.1 says) or from the body (client_secret_post).
export function clientCredentials(req, form) {
  const header = req.headers.authorization;
  if (header && /^basic\s+/i.test(header)) {
    const decoded = Buffer.from(header.replace(/^basic\s+/i, '').trim(), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i === -1) {
      return { malformed: true };
    }
    const dec = (s) => {
      try {
        return decodeURIComponent(s.replace(/\+/g, '%20'));
      } catch {
        return s;
      }
    };
    return { clientId: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)), method: 'client_secret_basic' };
  }
  if (form?.client_secret !== undefined) {
    return { clientId: form.client_id, secret: form.client_secret, method: 'client_secret_post' };
  }
  return { clientId: form?.client_id, secret: undefined, method: 'none' };
}

export function bearerToken(req, form) {
  const header = req.headers.authorization;
  if (header && /^bearer\s+/i.test(header)) {
    return header.replace(/^bearer\s+/i, '').trim();
  }
  return form?.access_token;
}

export function escapeHtml(value) {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export function parseCookies(req) {
  const out = {};
  for (const part of (req.headers.cookie || '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) {
      out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
    }
  }
  return out;
}

// A stand-in for an IncomingMessage whose body was already read: same
// method, URL and headers, the given body as a new readable stream.
export function replayRequest(req, body) {
  const buf = Buffer.from(body);
  const stream = Readable.from(buf.length ? [buf] : [], { objectMode: false });
  stream.headers = { ...req.headers, 'content-length': String(buf.length) };
  delete stream.headers['transfer-encoding'];
  stream.rawHeaders = [];
  stream.method = req.method;
  stream.url = req.url;
  stream.httpVersion = req.httpVersion;
  stream.httpVersionMajor = req.httpVersionMajor;
  stream.httpVersionMinor = req.httpVersionMinor;
  stream.socket = req.socket;
  stream.connection = req.socket;
  return stream;
}
