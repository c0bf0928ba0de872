// Type-checks a realm export against Keycloak's own RealmRepresentation
// (from the official admin client, @keycloak/keycloak-admin-client) with
// tsc --strict: the file is written out as one object literal assigned to
// that type, so TypeScript's excess-property checks catch a misspelt or
// unknown key at any depth, and a value of the wrong type fails too.
//
//   node realmcheck/check.mjs [realm file]   (default: deploy/keycloak/realm-agents.json)

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const file = path.resolve(process.argv[2] || path.join(root, '..', '..', 'deploy', 'keycloak', 'realm-agents.json'));
const realm = JSON.parse(readFileSync(file, 'utf8'));

const dir = mkdtempSync(path.join(tmpdir(), 'realmcheck-'));
try {
  const defs = path.join(root, 'node_modules', '@keycloak', 'keycloak-admin-client', 'lib', 'defs', 'realmRepresentation.js');
  writeFileSync(path.join(dir, 'realm.ts'), `import type RealmRepresentation from ${JSON.stringify(defs)};\n`
    + `export const realm: RealmRepresentation = ${JSON.stringify(realm, null, 2)};\n`);
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '--strict', '--noEmit', '--skipLibCheck', '--target', 'es2022',
      '--module', 'nodenext', '--moduleResolution', 'nodenext', path.join(dir, 'realm.ts')], { stdio: 'pipe' });
  } catch (err) {
    process.stderr.write(`${file} is not a valid Keycloak RealmRepresentation:\n${err.stdout}${err.stderr}`);
    process.exit(1);
  }
  process.stdout.write(`${file}: a valid Keycloak RealmRepresentation (tsc --strict)\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
