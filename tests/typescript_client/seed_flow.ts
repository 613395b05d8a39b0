// Seed 000's host wiring with memoryhubStore(): read → change → CAS → conflict → re-read → decide again.
import { MemoryHub, RevisionConflict, memoryhubStore } from "@memoryhub/client";

declare const process: { env: Record<string, string | undefined> };

// The store contract of seed 000's createMemoryTools (@flowgpt/agent-core-tools/memory).
type Memory = Record<string, unknown>;
interface SeedStore {
  get(signal: AbortSignal): Promise<{ revision: number; memory: Memory | null }>;
  compareAndSet(commit: { expectedRevision: number; memory: Memory }, signal: AbortSignal): Promise<number>;
}

// A stand-in for createMemoryTools (the seed's package is published with restricted access): the same
// contract — get_memory reads the store; update_memory checks, commits through compareAndSet, demands
// revision = expectedRevision + 1 and is never replayed.
function createMemoryTools(options: { store: SeedStore; beforeUpdate?: (memory: Memory) => void }) {
  const getMemory = {
    name: "get_memory",
    replay: "never" as const,
    async execute(_id: string, _args: Record<string, never>, signal: AbortSignal) {
      return { details: await options.store.get(signal) };
    },
  };
  const updateMemory = {
    name: "update_memory",
    replay: "never" as const,
    async execute(_id: string, args: { expectedRevision: number; memory: Memory }, signal: AbortSignal) {
      options.beforeUpdate?.(args.memory);
      const revision = await options.store.compareAndSet(args, signal);
      if (revision !== args.expectedRevision + 1) throw new Error(`store answered revision ${revision}`);
      return { details: { revision } };
    },
  };
  return [getMemory, updateMemory] as const;
}

const { BASE_URL = "", API_KEY = "" } = process.env;
const hub = new MemoryHub({ baseUrl: BASE_URL, apiKey: API_KEY });
const minted = await hub.mintToolToken("u1", "tower");
const scopedStore = memoryhubStore({ baseUrl: BASE_URL, toolToken: minted.token });
const [getMemory, updateMemory] = createMemoryTools({
  store: {
    get: (signal) => scopedStore.get(signal),
    compareAndSet: (commit, signal) => scopedStore.compareAndSet(commit, signal),
  },
  beforeUpdate(memory) {
    if (typeof memory.scene !== "string") throw new Error("scene 必填");
  },
});
const signal = new AbortController().signal;
const say = (step: string, value: unknown) => console.log(JSON.stringify({ step, value }));

const empty = (await getMemory.execute("read-0", {}, signal)).details;
say("empty", empty);
await updateMemory.execute("write-0", { expectedRevision: 0, memory: { scene: "城门", keyHolder: "用户" } }, signal);
const current = (await getMemory.execute("read-1", {}, signal)).details;
say("read", current);
// Another writer (the host, with its API key) commits between the model's read and its write.
await hub.memory("u1", "tower").put({ expectedRevision: current.revision, memory: { ...current.memory, weather: "rain" } });
try {
  await updateMemory.execute("write-1", { expectedRevision: current.revision, memory: { scene: "城门", keyHolder: "守卫" } }, signal);
  say("conflict", "none");
} catch (error) {
  if (!(error instanceof RevisionConflict)) throw error;
  say("conflict", { code: error.code, currentRevision: error.currentRevision });
  // Re-read and decide again on what is stored now; never the old proposal with the new revision.
  const fresh = (await getMemory.execute("read-2", {}, signal)).details;
  say("reread", fresh);
  const saved = await updateMemory.execute("write-2", { expectedRevision: fresh.revision, memory: { ...fresh.memory, scene: "城门", keyHolder: "守卫" } }, signal);
  say("saved", saved.details);
}
say("final", (await getMemory.execute("read-3", {}, signal)).details);
