/**
 * @memoryhub/client: a typed client of memoryhub's HTTP API (types generated from its OpenAPI schema into
 * ./schema.ts), fetch only, so it runs on Node >= 20 and in browsers. Importing it does nothing else.
 */
import createClient, { type Client } from "openapi-fetch";

import { checkPathId, pathIdGuard, unwrap, type MemoryObject, type MemorySnapshot } from "./http.js";
import type { components, paths } from "./schema.js";

export * from "./errors.js";
export { unwrap } from "./http.js";
export type { components, operations, paths } from "./schema.js";

export type Schemas = components["schemas"];
export type { MemoryObject, MemorySnapshot } from "./http.js";

export interface MemoryHubOptions {
  /** The server, e.g. "https://memoryhub.example.com" (no trailing /v1). */
  baseUrl: string;
  /** A product API key (mhk_…) or a tool token (mht_…): sent as `Authorization: Bearer …`. */
  apiKey: string;
  /** Another fetch (tests, proxies); the global fetch by default. */
  fetch?: typeof fetch;
}

/** A fresh key for Idempotency-Key: a retry of the same write with the same key runs it once. */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

export class MemoryHub {
  /** The typed client of every operation of the schema (openapi-fetch): `hub.api.GET("/v1/…", {params})`. */
  readonly api: Client<paths>;

  constructor(options: MemoryHubOptions) {
    this.api = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      headers: { Authorization: `Bearer ${options.apiKey}` },
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.api.use(pathIdGuard); // an id that is empty or only dots throws before fetch (checkPathId)
  }

  /** The JSON memory document of one conversation of one user (a user or conversation id of dots throws). */
  memory(userId: string, conversationId: string): MemoryDocument {
    return new MemoryDocument(this.api, userId, conversationId);
  }

  /** Mint a tool token bound to this user and conversation (shown once; at most 24 h). */
  mintToolToken(
    userId: string,
    conversationId: string,
    body: Schemas["ToolTokenRequest"] = {},
  ): Promise<Schemas["ToolTokenMinted"]> {
    return unwrap(
      this.api.POST("/v1/users/{user_id}/conversations/{conversation_id}/tool-tokens", {
        params: { path: { user_id: userId, conversation_id: conversationId } },
        body,
      }),
    );
  }

  /** Call a model-facing tool (needs a tool token as `apiKey`): get_memory, update_memory. */
  callTool(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<Schemas["ToolResult"]> {
    return unwrap(this.api.POST("/v1/tools/call", { body: { name, arguments: args }, signal })).then(
      (answer) => answer.details,
    );
  }
}

export class MemoryDocument {
  private readonly path: { user_id: string; conversation_id: string };

  constructor(
    private readonly api: Client<paths>,
    userId: string,
    conversationId: string,
  ) {
    checkPathId("userId", userId);
    checkPathId("conversationId", conversationId);
    this.path = { user_id: userId, conversation_id: conversationId };
  }

  /** The current revision and document ({revision: 0, memory: null} when nothing is stored). */
  async get(signal?: AbortSignal): Promise<MemorySnapshot> {
    const read = await unwrap(
      this.api.GET("/v1/users/{user_id}/conversations/{conversation_id}/memory", { params: { path: this.path }, signal }),
    );
    return { revision: read.revision, memory: read.memory as MemoryObject | null };
  }

  /**
   * Replace the whole document if the stored revision is still `expectedRevision`; answers the new revision.
   * A lost race throws RevisionConflict (re-read and decide again). With `idempotencyKey`, a retry of this
   * call answers what the first one did instead of writing twice.
   */
  async put(
    write: { expectedRevision: number; memory: MemoryObject; idempotencyKey?: string },
    signal?: AbortSignal,
  ): Promise<number> {
    const headers: Record<string, string> = write.idempotencyKey ? { "Idempotency-Key": write.idempotencyKey } : {};
    const answer = await unwrap(
      this.api.PUT("/v1/users/{user_id}/conversations/{conversation_id}/memory", {
        params: { path: this.path },
        body: { expectedRevision: write.expectedRevision, memory: write.memory },
        headers,
        signal,
      }),
    );
    return answer.revision;
  }

  /** Every committed revision, newest first, page after page. */
  async *revisions(limit = 100): AsyncGenerator<Schemas["MemoryRevision"]> {
    let cursor: string | undefined;
    do {
      const page = await unwrap(
        this.api.GET("/v1/users/{user_id}/conversations/{conversation_id}/memory/revisions", {
          params: { path: this.path, query: { limit, ...(cursor ? { cursor } : {}) } },
        }),
      );
      yield* page.results;
      cursor = page.next ?? undefined;
    } while (cursor);
  }
}

export { memoryhubStore, type MemoryhubStore, type MemoryhubStoreOptions, type MemoryCommit } from "./store.js";
