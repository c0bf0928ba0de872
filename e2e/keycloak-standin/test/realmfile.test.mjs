// deploy/keycloak/realm-agents.json is a real Keycloak realm: it
// type-checks against Keycloak's RealmRepresentation (official admin
// client) with tsc --strict, and a misspelt key or a wrong type does not.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const realmFile = path.join(root, '..', '..', 'deploy', 'keycloak', 'realm-agents.json');

function check(file) {
  return spawnSync(process.execPath, [path.join(root, 'realmcheck', 'check.mjs'), file], { encoding: 'utf8' });
}

describe('realm file against RealmRepresentation (tsc --strict)', () => {
  it('deploy/keycloak/realm-agents.json type-checks', () => {
    const r = check(realmFile);
    assert.equal(r.status, 0, r.stderr);
  });

  for (const [name, mutate, want] of [
    ['a misspelt client key', (d) => { d.clients[0].redirectUri = d.clients[0].redirectUris; }, /redirectUri/],
    ['a wrong type', (d) => { d.users[0].enabled = 'yes'; }, /not assignable to type 'boolean/],
    ['an unknown mapper key', (d) => { d.clients[0].protocolMappers[0].consentRequired = false; }, /consentRequired/],
  ]) {
    it(`refuses ${name}`, () => {
      const d = JSON.parse(readFileSync(realmFile, 'utf8'));
      mutate(d);
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'realm-')), 'realm.json');
      writeFileSync(file, JSON.stringify(d));
      const r = check(file);
      assert.equal(r.status, 1);
      assert.match(r.stderr, want);
    });
  }
});
