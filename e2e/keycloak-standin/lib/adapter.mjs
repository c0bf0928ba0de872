// In-memory storage for oidc-provider's models (codes, refresh tokens,
// grants, sessions, interactions). One Store per realm; it outlives the
// oidc-provider instance, which is rebuilt when the signing keys rotate.

const nowMs = () => Date.now();

export class Store {
  constructor() {
    this.items = new Map(); // "<Model>:<id>" -> { payload, expiresAt }
    this.byGrant = new Map(); // grantId -> Set of item keys
    this.byUid = new Map(); // "<Model>:<uid>" -> id
    this.byUserCode = new Map(); // "<Model>:<userCode>" -> id
  }

  get(model, id) {
    const key = `${model}:${id}`;
    const entry = this.items.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= nowMs()) {
      this.items.delete(key);
      return undefined;
    }
    return structuredClone(entry.payload);
  }

  set(model, id, payload, expiresIn) {
    const key = `${model}:${id}`;
    this.items.set(key, {
      payload: structuredClone(payload),
      expiresAt: expiresIn ? nowMs() + expiresIn * 1000 : undefined,
    });
    if (payload.grantId) {
      if (!this.byGrant.has(payload.grantId)) this.byGrant.set(payload.grantId, new Set());
      this.byGrant.get(payload.grantId).add(key);
    }
    if (payload.uid) this.byUid.set(`${model}:${payload.uid}`, id);
    if (payload.userCode) this.byUserCode.set(`${model}:${payload.userCode}`, id);
  }

  delete(model, id) {
    this.items.delete(`${model}:${id}`);
  }

  // Removes the grant and everything issued under it (codes, refresh tokens).
  revokeGrant(grantId) {
    for (const key of this.byGrant.get(grantId) || []) this.items.delete(key);
    this.byGrant.delete(grantId);
    this.items.delete(`Grant:${grantId}`);
  }

  // Drops expired entries; called now and then so a long test run stays small.
  sweep() {
    const now = nowMs();
    for (const [key, entry] of this.items) {
      if (entry.expiresAt !== undefined && entry.expiresAt <= now) this.items.delete(key);
    }
    for (const [grantId, keys] of this.byGrant) {
      for (const key of keys) if (!this.items.has(key)) keys.delete(key);
      if (!keys.size && !this.items.has(`Grant:${grantId}`)) this.byGrant.delete(grantId);
    }
  }
}

// Returns an oidc-provider adapter class bound to one Store.
export function adapterFor(store) {
  return class StandinAdapter {
    constructor(model) {
      this.model = model;
    }

    async upsert(id, payload, expiresIn) {
      store.set(this.model, id, payload, expiresIn);
    }

    async find(id) {
      return store.get(this.model, id);
    }

    async findByUid(uid) {
      const id = store.byUid.get(`${this.model}:${uid}`);
      return id === undefined ? undefined : store.get(this.model, id);
    }

    async findByUserCode(userCode) {
      const id = store.byUserCode.get(`${this.model}:${userCode}`);
      return id === undefined ? undefined : store.get(this.model, id);
    }

    async consume(id) {
      const entry = store.items.get(`${this.model}:${id}`);
      if (entry) entry.payload.consumed = Math.floor(nowMs() / 1000);
    }

    async destroy(id) {
      store.delete(this.model, id);
    }

    async revokeByGrantId(grantId) {
      const keys = store.byGrant.get(grantId);
      if (!keys) return;
      for (const key of [...keys]) {
        if (key.startsWith(`${this.model}:`)) {
          store.items.delete(key);
          keys.delete(key);
        }
      }
    }
  };
}
