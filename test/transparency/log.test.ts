import { createRequire } from "node:module";
import { fromBase64 } from "@handoff/sdk/crypto";
import {
  type Checkpoint,
  entryBytes,
  entryLeafHash,
  type LogEntry,
  openCheckpoint,
  parseVerifierKey,
  verifyConsistency,
  verifyInclusion,
} from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../http/helpers.js";
import { downloadOk, newParties, sendTransfer, waitUntil } from "../http/transfer-helpers.js";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";

const { verifyMerkleInclusion } = createRequire(import.meta.url)("@sigstore/verify/dist/tlog/merkle") as {
  verifyMerkleInclusion(
    entry: { canonicalizedBody: Buffer; inclusionProof: { logIndex: string; hashes: Buffer[] } },
    checkpoint: { logSize: string; logHash: Buffer },
  ): void;
};

interface Signed extends Checkpoint {
  note: string;
}

async function eventCount(db: Knex): Promise<number> {
  const { rows } = await db.raw<{ rows: { n: string }[] }>("select count(*)::text as n from events");
  return Number(rows[0]?.n);
}

/** The newest checkpoint once it covers every event stored now (decisions 9.2: within about a second). */
async function checkpointOfAll(t: TestApp): Promise<Signed> {
  const key = parseVerifierKey((await t.call("GET", "/v1/log/key")).json().vkey);
  const events = await eventCount(t.service.db);
  let signed: Signed | null = null;
  await waitUntil(
    async () => {
      const res = await t.call("GET", "/v1/log/checkpoint");
      if (res.statusCode !== 200) return false;
      signed = { ...openCheckpoint(res.body, key), note: res.body };
      return signed.size >= events;
    },
    "a checkpoint covering every event",
    5000,
  );
  return signed as unknown as Signed;
}

/** Every entry of the account's audit feed with its leaf (decisions 9.3). */
async function leavesOf(t: TestApp, apiKey: string) {
  const audit = await t.call("GET", "/v1/audit?limit=1000", { key: apiKey });
  const positions: string[] = audit.json().entries.map((e: { position: string }) => e.position);
  return Promise.all(
    positions.map(async (position) => {
      const res = await t.call("GET", `/v1/log/entries/${position}`, { key: apiKey });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { leaf_index: number; entry: LogEntry };
    }),
  );
}

async function inclusion(t: TestApp, apiKey: string, leafIndex: number, treeSize: number) {
  const res = await t.call("GET", `/v1/log/proof/inclusion?leaf_index=${leafIndex}&tree_size=${treeSize}`, {
    key: apiKey,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { leaf_index: number; tree_size: number; leaf_hash: string; proof: string[] };
}

function describeOn(database: "pglite" | "postgres") {
  const skip = database === "postgres" && !postgresServer;
  describe.skipIf(skip)(
    titled(`the transparency log on ${database} (decisions 9)`, skip ? postgresSkipReason : ""),
    () => {
      let t: TestApp;
      let parties: Awaited<ReturnType<typeof newParties>>;
      beforeAll(async () => {
        t = await startTestApp({ database });
        parties = await newParties(t);
        const transfer = await sendTransfer(t, parties.apiKey);
        await downloadOk(t, parties.apiKey, transfer.id, "bob");
      });
      afterAll(async () => t?.close());

      it("signs a checkpoint of every event that anyone can verify with the published key", async () => {
        const key = await t.call("GET", "/v1/log/key");
        expect(key.statusCode).toBe(200);
        const { origin, public_key, vkey } = key.json();
        expect(origin).toBe(`${new URL(t.service.config.publicBaseUrl).host}/handoff`);
        expect(fromBase64(public_key)).toHaveLength(32);
        expect(vkey).toMatch(/^[^+]+\+[0-9a-f]{8}\+/);
        const checkpoint = await checkpointOfAll(t);
        expect(checkpoint.origin).toBe(origin);
        expect(checkpoint.note.split("\n").slice(0, 3).join("\n")).toBe(
          `${origin}\n${checkpoint.size}\n${Buffer.from(checkpoint.root).toString("base64")}`,
        );
        expect(checkpoint.note).toMatch(
          new RegExp(`\\n\\n\u2014 ${origin.replace(/[.]/g, "\\.")} [A-Za-z0-9+/=]+\\n$`),
        );
      });

      it("serves a kept checkpoint again byte for byte, and 404 for a size never signed", async () => {
        const checkpoint = await checkpointOfAll(t);
        const again = await t.call("GET", `/v1/log/checkpoint?tree_size=${checkpoint.size}`);
        expect(again.statusCode).toBe(200);
        expect(again.headers["content-type"]).toMatch(/^text\/plain/);
        expect(again.body).toBe(checkpoint.note);
        expectError(
          await t.call("GET", `/v1/log/checkpoint?tree_size=${checkpoint.size + 1000}`),
          404,
          "NOT_FOUND",
        );
      });

      it("proves each of the account's events in the tree, as its own verifier and Sigstore's both check", async () => {
        const checkpoint = await checkpointOfAll(t);
        const leaves = await leavesOf(t, parties.apiKey);
        expect(leaves.map((l) => l.entry.type)).toContain("DownloadRecorded");
        for (const { leaf_index, entry } of leaves) {
          const proof = await inclusion(t, parties.apiKey, leaf_index, checkpoint.size);
          const leafHash = entryLeafHash(entry);
          expect(proof.leaf_hash).toBe(Buffer.from(leafHash).toString("base64"));
          const hashes = proof.proof.map(fromBase64);
          expect(verifyInclusion(leafHash, leaf_index, checkpoint.size, hashes, checkpoint.root)).toBe(true);
          expect(() =>
            verifyMerkleInclusion(
              {
                canonicalizedBody: Buffer.from(entryBytes(entry)),
                inclusionProof: { logIndex: String(leaf_index), hashes: hashes.map((h) => Buffer.from(h)) },
              },
              { logSize: String(checkpoint.size), logHash: Buffer.from(checkpoint.root) },
            ),
          ).not.toThrow();
        }
      });

      it("proves a later checkpoint consistent with an earlier one", async () => {
        const before = await checkpointOfAll(t);
        await sendTransfer(t, parties.apiKey);
        const after = await checkpointOfAll(t);
        expect(after.size).toBeGreaterThan(before.size);
        const res = await t.call("GET", `/v1/log/proof/consistency?from=${before.size}&to=${after.size}`, {
          key: parties.apiKey,
        });
        expect(res.statusCode, res.body).toBe(200);
        const proof = (res.json().proof as string[]).map(fromBase64);
        expect(verifyConsistency(before.size, after.size, before.root, after.root, proof)).toBe(true);
      });

      it("refuses proofs beyond the newest checkpoint, and shows no other account's entries", async () => {
        const checkpoint = await checkpointOfAll(t);
        const beyond = `/v1/log/proof/inclusion?leaf_index=0&tree_size=${checkpoint.size + 1}`;
        expectError(await t.call("GET", beyond, { key: parties.apiKey }), 400, "VALIDATION_ERROR");
        const inverted = `/v1/log/proof/consistency?from=${checkpoint.size}&to=1`;
        expectError(await t.call("GET", inverted, { key: parties.apiKey }), 400, "VALIDATION_ERROR");
        const [mine] = await leavesOf(t, parties.apiKey);
        const stranger = await t.newAccount();
        const position = mine?.entry.position ?? "";
        expectError(
          await t.call("GET", `/v1/log/entries/${position}`, { key: stranger.apiKey }),
          404,
          "NOT_FOUND",
        );
        expectError(await t.call("GET", `/v1/log/entries/${position}`), 401, "UNAUTHORIZED");
      });

      it("exports the account's entries with proofs against one checkpoint", async () => {
        await checkpointOfAll(t);
        const res = await t.call("GET", "/v1/audit/export", { key: parties.apiKey });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers["content-type"]).toMatch(/^application\/x-ndjson/);
        const [head, ...lines] = res.body
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line));
        const key = parseVerifierKey((await t.call("GET", "/v1/log/key")).json().vkey);
        const checkpoint = openCheckpoint(head.checkpoint, key);
        expect(lines.length).toBe((await leavesOf(t, parties.apiKey)).length);
        let previous = -1;
        for (const { leaf_index, entry, inclusion: proof } of lines) {
          expect(leaf_index).toBeGreaterThan(previous);
          previous = leaf_index;
          const hashes = (proof as string[]).map(fromBase64);
          expect(
            verifyInclusion(entryLeafHash(entry), leaf_index, checkpoint.size, hashes, checkpoint.root),
          ).toBe(true);
        }
      });

      it("proves an agent's current keys in agent answers and resolve, and the proof moves with a rotation (9.6)", async () => {
        const key = parseVerifierKey((await t.call("GET", "/v1/log/key")).json().vkey);
        const bob = parties.bob;
        await checkpointOfAll(t);
        const checkProof = (
          answer: { public_key?: string | null; key_version?: number | null; key_proof: unknown },
          agentId = bob.id,
        ) => {
          const proof = answer.key_proof as {
            leaf_index: number;
            entry: LogEntry;
            tree_size: number;
            checkpoint: string;
            inclusion: string[];
          };
          const checkpoint = openCheckpoint(proof.checkpoint, key);
          expect(checkpoint.size).toBe(proof.tree_size);
          expect(proof.entry).toMatchObject({
            type: "AgentConnected",
            stream: `agent-${agentId}`,
            data: { publicKey: answer.public_key, keyVersion: answer.key_version },
          });
          const hashes = proof.inclusion.map(fromBase64);
          expect(
            verifyInclusion(
              entryLeafHash(proof.entry),
              proof.leaf_index,
              proof.tree_size,
              hashes,
              checkpoint.root,
            ),
          ).toBe(true);
          return proof;
        };
        const got = await t.call("GET", `/v1/agents/${bob.id}`, { key: parties.apiKey });
        expect(got.statusCode, got.body).toBe(200);
        const first = checkProof(got.json());
        const resolved = await t.call("GET", "/v1/agents/resolve?agent_id=bob", { key: parties.apiKey });
        expect(resolved.statusCode, resolved.body).toBe(200);
        expect(checkProof(resolved.json()).leaf_index).toBe(first.leaf_index);

        // Rotation (decisions 3.7): disconnect and register the slug again; the proof names the new leaf.
        expect((await t.call("DELETE", `/v1/agents/${bob.id}`, { key: parties.apiKey })).statusCode).toBe(
          200,
        );
        const again = await t.call("POST", "/v1/agents/register", {
          key: parties.apiKey,
          body: { agent_id: "bob", public_key: Buffer.alloc(32, 9).toString("base64") },
        });
        expect(again.statusCode, again.body).toBe(201);
        parties.bob = again.json();
        await checkpointOfAll(t);
        const rotated = await t.call("GET", "/v1/agents/resolve?agent_id=bob", { key: parties.apiKey });
        const proof = checkProof(rotated.json(), again.json().id);
        expect(proof.leaf_index).toBeGreaterThan(first.leaf_index);
        expect(rotated.json().key_version).toBe(2);
      });

      it("keeps every leaf and proof valid through an erasure (decisions 6.5)", async () => {
        const before = await checkpointOfAll(t);
        const erased = await t.call("POST", `/v1/admin/accounts/${parties.accountId}/erase`, {
          key: ADMIN_TOKEN,
        });
        expect(erased.statusCode, erased.body).toBe(200);
        const after = await checkpointOfAll(t);
        const check = await t.service.transparency.check();
        expect(check).toMatchObject({ ok: true });
        const res = await t.call("GET", `/v1/log/proof/consistency?from=${before.size}&to=${after.size}`, {
          key: (await t.newAccount()).apiKey,
        });
        const proof = (res.json().proof as string[]).map(fromBase64);
        expect(verifyConsistency(before.size, after.size, before.root, after.root, proof)).toBe(true);
      });
    },
  );
}

describeOn("pglite");
describeOn("postgres");
