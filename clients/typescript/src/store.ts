import createClient from "openapi-fetch";

import { unwrap, type MemoryObject, type MemorySnapshot } from "./http.js";
import type { paths } from "./schema.js";

/** What seed 000's `createMemoryTools({store})` hands the store on update_memory. */
export interface MemoryCommit {
  expectedRevision: number;
  memory: MemoryObject;
}

/** The store seed 000's `createMemoryTools` expects: `{get, compareAndSet}`. */
export interface MemoryhubStore {
  /** {revision, memory}; {revision: 0, memory: null} when nothing is stored. */
  get(signal?: AbortSignal): Promise<MemorySnapshot>;
  /**
   * Commit `memory` iff the stored revision is `expectedRevision`; resolves to the new revision
   * (expectedRevision + 1). A lost race rejects with RevisionConflict: the tool re-reads and decides again.
   * Never retried here: a write whose outcome is unknown is read back, not replayed.
   */
  compareAndSet(commit: MemoryCommit, signal?: AbortSignal): Promise<number>;
}

export interface MemoryhubStoreOptions {
  baseUrl: string;
  /** A tool token (mht_…) minted by the host for one user and conversation: it alone decides whose memory. */
  toolToken: string;
  fetch?: typeof fetch;
}

/** A store bound to one tool token, over POST /v1/tools/call (get_memory, update_memory). */
export function memoryhubStore(options: MemoryhubStoreOptions): MemoryhubStore {
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    headers: { Authorization: `Bearer ${options.toolToken}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const call = (name: string, args: Record<string, unknown>, signal?: AbortSignal) =>
    unwrap(api.POST("/v1/tools/call", { body: { name, arguments: args }, signal })).then((answer) => answer.details);
  return {
    async get(signal) {
      const details = await call("get_memory", {}, signal);
      if (!("memory" in details)) throw new TypeError("get_memory answered without a memory");
      return { revision: details.revision, memory: details.memory as MemoryObject | null };
    },
    async compareAndSet(commit, signal) {
      const details = await call(
        "update_memory",
        { expectedRevision: commit.expectedRevision, memory: commit.memory },
        signal,
      );
      return details.revision;
    },
  };
}
