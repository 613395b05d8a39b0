// The package acceptance's first program: read → write with the revision → conflict → re-read, with MemoryHub.
import { MemoryHub, MemoryHubError, RevisionConflict, Unauthenticated, newIdempotencyKey } from "@memoryhub/client";

declare const process: { env: Record<string, string | undefined> };

const { BASE_URL = "", API_KEY = "" } = process.env;
const hub = new MemoryHub({ baseUrl: BASE_URL, apiKey: API_KEY });
const doc = hub.memory("u1", "gate");
const say = (step: string, value: unknown) => console.log(JSON.stringify({ step, value }));

const empty = await doc.get();
say("read", empty);
const revision = await doc.put({ expectedRevision: empty.revision, memory: { scene: "城门", keyHolder: "用户" } });
say("write", revision);
try {
  await doc.put({ expectedRevision: empty.revision, memory: { scene: "stale" } });
  say("conflict", "none");
} catch (error) {
  if (!(error instanceof RevisionConflict) || !(error instanceof MemoryHubError)) throw error;
  say("conflict", { code: error.code, status: error.status, currentRevision: error.currentRevision, details: error.details });
}
const again = await doc.get();
say("reread", again);

const key = newIdempotencyKey();
const first = await doc.put({ expectedRevision: again.revision, memory: { scene: "塔顶" }, idempotencyKey: key });
const retried = await doc.put({ expectedRevision: again.revision, memory: { scene: "塔顶" }, idempotencyKey: key });
say("retried", [first, retried]);

const seen: number[] = [];
for await (const stored of doc.revisions(1)) seen.push(stored.revision);
say("revisions", seen);

// An id made only of dots never reaches fetch: fetch and URL fold ".." into the parent path (the user).
let fetched = 0;
const counted = new MemoryHub({
  baseUrl: BASE_URL,
  apiKey: API_KEY,
  fetch: (input, init) => {
    fetched += 1;
    return fetch(input, init);
  },
});
const refused: string[] = [];
const refusedBeforeFetch = async (name: string, attempt: () => unknown) => {
  try {
    await attempt();
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    refused.push(name);
  }
};
await refusedBeforeFetch("memory", () => counted.memory("u1", ".."));
await refusedBeforeFetch("mintToolToken", () => counted.mintToolToken("u1", "."));
await refusedBeforeFetch("api", () =>
  counted.api.DELETE("/v1/users/{user_id}/conversations/{conversation_id}", {
    params: { path: { user_id: "u1", conversation_id: ".." } },
  }),
);
await refusedBeforeFetch("empty", () => counted.api.DELETE("/v1/users/{user_id}", { params: { path: { user_id: "" } } }));
await refusedBeforeFetch("slash", () =>
  counted.api.DELETE("/v1/users/{user_id}", { params: { path: { user_id: "u1/conversations/gate" } } }),
);
say("dotIds", { refused, fetched });
say("dotIdsKept", (await counted.memory("u1", "gate").get()).memory);

try {
  await new MemoryHub({ baseUrl: BASE_URL, apiKey: "mhk_unknown_key" }).memory("u1", "gate").get();
} catch (error) {
  if (!(error instanceof Unauthenticated)) throw error;
  say("unauthenticated", { code: error.code, status: error.status });
}
