import { randomBytes } from "node:crypto";
import { readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../http/transfer-helpers.js";
import { ADMIN_TOKEN } from "../support/app.js";
import { freshPostgres, postgresServer } from "../support/databases.js";
import { freePort, json, ServerProcess } from "../support/server-process.js";
import { startReceiver } from "../support/webhook-receiver.js";
import { handoff, tempDir } from "./support.js";

/** Start-up (tsx and the embedded database) takes minutes when the machine is busy. */
const START_TIMEOUT_MS = 480_000;
const OWNER = "owner@example.com";

interface Json {
  [key: string]: unknown;
}

/**
 * The account commands (`accounts`, `whoami`, `agents`, `transfers`, `keys`, `connections`,
 * `outbox`) and the messages of issue 25, against a real `handoff serve` in a child process.
 */
describe("handoff account commands against a running server", () => {
  const work = tempDir("handoff-account-cli-");
  const dataDir = join(work.path, "data");
  const accountFile = join(work.path, "account.json");
  let database: { url: string; drop(): Promise<void> } | null = null;
  let serverEnv: Record<string, string>;
  let server: ServerProcess;
  let serverStderr = "";
  let env: Record<string, string>;
  let apiKey: string;
  let keyId: string;

  /** `handoff ARGS` as the operator: the server's environment, no client settings. */
  const operator = (args: string[]) => handoff(args, serverEnv, work.path);
  /** `handoff ARGS` as the owner's client. */
  const client = (args: string[], extra: Record<string, string> = {}) =>
    handoff(args, { ...env, ...extra }, work.path);
  const ok = async (args: string[], extra: Record<string, string> = {}) => {
    const run = await client(args, extra);
    expect(run.status, `${args.join(" ")}: ${run.stderr}`).toBe(0);
    return run;
  };
  const okJson = async (args: string[]) => JSON.parse((await ok(args)).stdout) as Json;

  const admin = async (method: string, path: string, body?: unknown): Promise<Json> =>
    (await json<Json>(server, method, path, ADMIN_TOKEN, body)).body;

  async function identity(slug: string): Promise<string> {
    const path = join(work.path, `${slug}.json`);
    await ok(["identity", "new", "--agent", slug, "--out", path]);
    return path;
  }

  function file(name: string, content: string | Buffer): string {
    const path = join(work.path, name);
    writeFileSync(path, content);
    return path;
  }

  beforeAll(async () => {
    database = postgresServer ? await freshPostgres(postgresServer) : null;
    serverEnv = {
      DATA_DIR: dataDir,
      ADMIN_TOKEN,
      TEST_CLOCK: "1",
      // The webhook receiver of the tests listens on 127.0.0.1.
      WEBHOOKS_ALLOW_PRIVATE: "1",
      ...(database ? { DATABASE_URL: database.url } : {}),
    };
    // The operator's commands run before the server: an embedded data folder has one process at a time.
    const created = await operator(["accounts", "create", "--email", OWNER, "--out", accountFile]);
    expect(created.status, created.stderr).toBe(0);
    const saved = JSON.parse(readFileSync(accountFile, "utf8"));
    apiKey = saved.api_key.api_key;
    keyId = saved.api_key.id;
    server = await ServerProcess.start(serverEnv, { readyTimeoutMs: START_TIMEOUT_MS });
    server.child.stderr?.on("data", (chunk: Buffer) => {
      serverStderr += chunk.toString("utf8");
    });
    env = { HANDOFF_URL: server.baseUrl, HANDOFF_API_KEY: apiKey };
  }, START_TIMEOUT_MS + 120_000);

  afterAll(async () => {
    await server?.kill();
    await database?.drop();
    work.remove();
  });

  it("accounts create --out wrote the key to a 0600 file and printed the account without it", () => {
    expect(statSync(accountFile).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(accountFile, "utf8"));
    expect(saved).toMatchObject({ account: { email: OWNER, plan: "free" }, api_key: { api_key: apiKey } });
  });

  it("prints a line for people at start: where it listens, the web app, the docs and the data", async () => {
    const until = Date.now() + 10_000;
    while (!serverStderr.includes("Handoff listening") && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const line = serverStderr.split("\n").find((text) => text.startsWith("Handoff listening")) ?? "";
    expect(line).toContain(`listening on ${server.baseUrl}`);
    expect(line).toContain(`API docs ${server.baseUrl}/docs`);
    expect(line).toMatch(/web app (http:\/\/127\.0\.0\.1:\d+\/|not built)/);
    expect(line).toContain(join(dataDir, "blobs"));
    expect(line).toContain(join(dataDir, "outbox"));
  });

  it("whoami names the account, its plan and the key in use; --json is the API's answer", async () => {
    const table = await ok(["whoami"]);
    expect(table.stdout).toMatch(new RegExp(`^account +${OWNER}`, "m"));
    expect(table.stdout).toMatch(/^plan +free$/m);
    expect(table.stdout).toMatch(/^max file size +50\.0 MiB$/m);
    const json = await okJson(["whoami", "--json"]);
    expect(json).toMatchObject({
      account: { email: OWNER, plan: "free", kind: "agent" },
      plan_limits: { max_file_size: 50 * 1024 * 1024 },
      credential: { kind: "api_key", key_id: keyId },
    });
  });

  it("agents list, get, update and delete, by slug", async () => {
    const alice = await identity("alice");
    await identity("bob");
    const table = await ok(["agents", "list"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^AGENT +STATUS +KEY +NAME +LAST SEEN +ID$/);
    expect(table.stdout).toMatch(/^alice +connected +v1 /m);
    expect(table.stdout).toMatch(/^bob +connected +v1 /m);
    const listed = await okJson(["agents", "list", "--json"]);
    expect((listed.agents as Json[]).map((agent) => agent.agent_id)).toEqual(["alice", "bob"]);

    const got = await okJson(["agents", "get", "alice"]);
    expect(got.public_key).toBe(JSON.parse(readFileSync(alice, "utf8")).x25519_public_key);
    const byUuid = await okJson(["agents", "get", got.id as string]);
    expect(byUuid.agent_id).toBe("alice");

    const updated = await okJson([
      "agents",
      "update",
      "alice",
      "--name",
      "Alice A",
      "--metadata",
      '{"team":"ops"}',
    ]);
    expect(updated).toMatchObject({ agent_id: "alice", name: "Alice A", metadata: { team: "ops" } });
    const nothing = await client(["agents", "update", "alice"]);
    expect(nothing.status).toBe(1);
    expect(nothing.stderr).toContain("nothing to change");

    // No terminal to ask on: a delete needs --yes, and nothing happens without it.
    const unconfirmed = await client(["agents", "delete", "bob"]);
    expect(unconfirmed.status).toBe(1);
    expect(unconfirmed.stderr).toContain("cannot be undone: add --yes");
    expect((await okJson(["agents", "get", "bob"])).connection_status).toBe("connected");
    const deleted = await okJson(["agents", "delete", "bob", "--yes"]);
    expect(deleted.connection_status).toBe("disconnected");

    const unknown = await client(["agents", "get", "nobody"]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toBe(
      "this account has no agent 'nobody' (handoff agents list shows its agents)\n",
    );
  });

  it("webhook set, test and deliveries: a signed webhook.test reaches the receiver", async () => {
    await identity("hooked");
    const receiver = await startReceiver();
    try {
      const set = await ok(["webhook", "set", "hooked", receiver.url]);
      const agent = JSON.parse(set.stdout) as Json;
      expect(agent).toMatchObject({ webhook_url: receiver.url, webhook_status: "active" });
      expect(agent.webhook_secret).toMatch(/^whsec_/);
      expect(set.stderr).toContain("shown only once");
      const tested = await ok(["webhook", "test", "hooked"]);
      const messageId = /msg_[0-9a-f]+/.exec(tested.stdout)?.[0];
      await waitUntil(() => receiver.received.length > 0, "the test message arrived", 30_000);
      const [received] = receiver.received;
      expect(received?.headers["webhook-id"]).toBe(messageId);
      new Webhook(agent.webhook_secret as string).verify(
        received?.body ?? "",
        received?.headers as Record<string, string>,
      );
      await waitUntil(
        async () => (await client(["webhook", "deliveries", "hooked"])).stdout.includes("delivered"),
        "the delivery log shows it delivered",
        30_000,
      );
      const table = await ok(["webhook", "deliveries", "hooked"]);
      expect(table.stdout.split("\n")[0]).toMatch(/^MESSAGE +TYPE +STATUS +ATTEMPTS +LAST +NEXT$/);
      expect(table.stdout).toMatch(new RegExp(`^${messageId} +webhook.test +delivered +1 +200 +- *$`, "m"));
      const page = await okJson(["webhook", "deliveries", "hooked", "--json"]);
      expect((page.deliveries as Json[])[0]).toMatchObject({ message_id: messageId, status: "delivered" });
      const again = await okJson(["webhook", "set", "hooked", `${receiver.url}/v2`]);
      expect(again).not.toHaveProperty("webhook_secret");
    } finally {
      await receiver.close();
      // The free plan holds two agents: the later tests register carol beside alice.
      await ok(["agents", "delete", "hooked", "--yes"]);
    }
  });

  it("identity new --keep-existing keeps a file that holds the agent's keys, and still refuses others", async () => {
    const path = join(work.path, "alice.json");
    const before = readFileSync(path, "utf8");
    const refused = await client(["identity", "new", "--agent", "alice", "--out", path]);
    expect(refused.status).toBe(1);
    const kept = await ok(["identity", "new", "--agent", "alice", "--out", path, "--keep-existing"]);
    expect(JSON.parse(kept.stdout)).toMatchObject({ file: path, agent_id: "alice", kept: true });
    expect(readFileSync(path, "utf8")).toBe(before);
    const other = await client(["identity", "new", "--agent", "carol", "--out", path, "--keep-existing"]);
    expect(other.status).toBe(1);
    expect(other.stderr).toContain("holds the keys of agent 'alice'");
    expect(readFileSync(path, "utf8")).toBe(before);
  });

  it("transfers list, get and delete; a used-up transfer says so (GONE)", async () => {
    const carol = await identity("carol");
    const alice = join(work.path, "alice.json");
    const sent = await ok([
      "send",
      "--identity",
      alice,
      "--to",
      "carol",
      "--max-downloads",
      "1",
      file("once.txt", "read me once"),
    ]);
    const transfer = JSON.parse(sent.stdout) as { id: string };

    const table = await ok(["transfers", "list"]);
    expect(table.stdout).toMatch(new RegExp(`^${transfer.id} +active +alice +carol +1 `, "m"));
    const page = await okJson(["transfers", "list", "--direction", "sent", "--json"]);
    expect((page.transfers as Json[]).map((t) => t.id)).toContain(transfer.id);
    expect(await okJson(["transfers", "get", transfer.id])).toMatchObject({ id: transfer.id, downloads: 0 });
    const badDirection = await client(["transfers", "list", "--direction", "sideways"]);
    expect(badDirection.status).toBe(1);
    expect(badDirection.stderr).toContain("--direction must be one of sent, received");

    await ok(["receive", transfer.id, "--identity", carol, "--out", join(work.path, "got-1")]);
    const again = await client([
      "receive",
      transfer.id,
      "--identity",
      carol,
      "--out",
      join(work.path, "got-2"),
    ]);
    expect(again.status).toBe(1);
    expect(again.stderr).toBe("this transfer is used up: its 1 allowed download was made (GONE)\n");

    const unconfirmed = await client(["transfers", "delete", transfer.id]);
    expect(unconfirmed.status).toBe(1);
    expect(await okJson(["transfers", "delete", transfer.id, "--yes"])).toEqual({
      id: transfer.id,
      status: "deleted",
    });
    const gone = await client(["transfers", "get", transfer.id]);
    expect(gone.status).toBe(1);
    expect(gone.stderr).toContain("(NOT_FOUND)");
  });

  it("a file over the plan's maximum names the plan and how to change plans", async () => {
    const big = join(work.path, "big.bin");
    writeFileSync(big, "");
    truncateSync(big, 50 * 1024 * 1024 + 1);
    const run = await client(["send", "--identity", join(work.path, "alice.json"), "--to", "carol", big]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      "'big.bin' is over the free plan's maximum file size of 50 MB (52428800 bytes); larger plans take larger files",
    );
    expect(run.stderr).toContain("handoff accounts plan --email ADDRESS --plan PLAN");
    expect(run.stderr).toContain("(FILE_TOO_LARGE)");
  });

  it("keys list, create and revoke: a revoked key answers 401 with what to check", async () => {
    const created = await okJson(["keys", "create", "--name", "ci"]);
    expect(created).toMatchObject({ name: "ci", api_key: expect.stringMatching(/^hnd_/) });
    const table = await ok(["keys", "list"]);
    expect(table.stdout).toMatch(new RegExp(`^${keyId} +default +\\S+ +\\(this key\\)$`, "m"));
    expect(table.stdout).toMatch(new RegExp(`^${created.id} +ci +\\S+$`, "m"));
    const listed = await okJson(["keys", "list", "--json"]);
    expect((listed.api_keys as Json[]).map((key) => key.id)).toEqual([keyId, created.id]);

    expect(await okJson(["keys", "revoke", created.id as string, "--yes"])).toMatchObject({
      id: created.id,
      status: "revoked",
    });
    const revoked = await client(["whoami"], { HANDOFF_API_KEY: created.api_key as string });
    expect(revoked.status).toBe(1);
    expect(revoked.stderr).toContain("(UNAUTHORIZED); check HANDOFF_API_KEY");
  });

  it("connections invite, accept, decline, list and remove between two accounts", async () => {
    const peer = (await admin("POST", "/v1/admin/accounts", { email: "peer@example.com" })) as {
      api_key: { api_key: string };
    };
    const asPeer = { HANDOFF_API_KEY: peer.api_key.api_key };

    const invited = await okJson(["connections", "invite", "peer@example.com"]);
    expect(invited).toMatchObject({ status: "pending", direction: "outgoing" });
    const incoming = JSON.parse((await ok(["connections", "list", "--json"], asPeer)).stdout) as {
      connections: Json[];
    };
    expect(incoming.connections[0]).toMatchObject({ id: invited.id, direction: "incoming" });
    const accepted = JSON.parse((await ok(["connections", "accept", invited.id as string], asPeer)).stdout);
    expect(accepted.status).toBe("active");
    const table = await ok(["connections", "list"]);
    expect(table.stdout).toMatch(new RegExp(`^${invited.id} +active +outgoing +`, "m"));
    const removed = await okJson(["connections", "remove", invited.id as string, "--yes"]);
    expect(removed.status).toBe("revoked");

    const again = await okJson(["connections", "invite", "peer@example.com"]);
    const declined = JSON.parse((await ok(["connections", "decline", again.id as string], asPeer)).stdout);
    expect(declined.status).toBe("declined");
  });

  it("the outbox keeps a verify link readable, and handoff outbox shows it whole", async () => {
    const person = `dana-${randomBytes(3).toString("hex")}@example.com`;
    const signup = await fetch(`${server.baseUrl}/v1/auth/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: person, password: "a long passphrase" }),
    });
    expect(signup.status).toBe(201);
    let shown = "";
    for (let i = 0; !shown.includes("/verify?token="); i++) {
      expect(i, "a verify e-mail in the outbox").toBeLessThan(300);
      await new Promise((resolve) => setTimeout(resolve, 100));
      shown = (await operator(["outbox", "--to", person])).stdout;
    }
    expect(shown).toMatch(new RegExp(`^\\S+  verify  ${person}  `, "m"));
    const link = /^ {2}(http\S+\/verify\?token=\S+)$/m.exec(shown)?.[1] as string;
    const token = new URL(link).searchParams.get("token") as string;

    // The .eml itself holds the link as it is: no quoted-printable `=3D` or soft line breaks.
    const listed = JSON.parse((await operator(["outbox", "--to", person, "--json"])).stdout) as {
      messages: { file: string; links: string[]; type: string }[];
    };
    expect(listed.messages[0]?.links).toEqual([link]);
    const raw = readFileSync(listed.messages[0]?.file as string, "utf8");
    expect(raw).toContain(link);
    expect(raw).toMatch(/^Content-Transfer-Encoding: (7bit|8bit)$/m);

    const delivery = await (await fetch(`${server.baseUrl}/v1/mail-delivery`)).json();
    expect(delivery).toEqual({ delivery: "outbox" });
    const verified = await fetch(`${server.baseUrl}/v1/auth/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token }),
    });
    expect(verified.status).toBe(200);
  });

  it("a refused connection names the URL and what to do; a bad month is called invalid", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const refused = await client(["whoami"], { HANDOFF_URL: closed });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`GET ${closed}/v1/account failed: ECONNREFUSED`);
    expect(refused.stderr).toContain(
      `nothing answers at ${closed}: start the server (npm start) or set HANDOFF_URL`,
    );
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);

    const month = await client(["report", "--month", "2026-13"]);
    expect(month.status).toBe(1);
    expect(month.stderr).toBe(
      '--month must be a month as YYYY-MM (month 01 to 12), got "2026-13" (handoff help lists the commands)\n',
    );
  });

  it("an expired transfer says it expired, and when (GONE)", async () => {
    const sent = await ok([
      "send",
      "--identity",
      join(work.path, "alice.json"),
      "--to",
      "carol",
      "--expires-in",
      "1h",
      file("later.txt", "too late"),
    ]);
    const transfer = JSON.parse(sent.stdout) as { id: string; expires_at: string };
    await admin("POST", "/v1/admin/clock", { advance_seconds: 7200 });
    const late = await client(["receive", transfer.id, "--identity", join(work.path, "carol.json")]);
    expect(late.status).toBe(1);
    expect(late.stderr).toBe(`this transfer expired at ${transfer.expires_at} (GONE)\n`);
  });
});

describe("handoff accounts create and plan, as the operator", () => {
  const work = tempDir("handoff-accounts-");
  const env = { DATA_DIR: join(work.path, "data") };
  afterAll(() => work.remove());

  it("refuses to overwrite --out FILE, keeps it with --keep-existing, and changes plans", async () => {
    const out = join(work.path, "account.json");
    const first = await handoff(["accounts", "create", "--email", "ops@example.com", "--out", out], env);
    expect(first.status, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ file: out, account: { email: "ops@example.com" } });
    expect(first.stdout).not.toContain("hnd_");
    const saved = readFileSync(out, "utf8");

    const again = await handoff(["accounts", "create", "--email", "ops@example.com", "--out", out], env);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(`${out} already exists`);
    expect(again.stderr).toContain("--keep-existing");
    const kept = await handoff(
      ["accounts", "create", "--email", "ops@example.com", "--out", out, "--keep-existing"],
      env,
    );
    expect(kept.status, kept.stderr).toBe(0);
    expect(JSON.parse(kept.stdout)).toMatchObject({ file: out, kept: true });
    const elsewhere = await handoff(
      ["accounts", "create", "--email", "other@example.com", "--out", out, "--keep-existing"],
      env,
    );
    expect(elsewhere.status).toBe(1);
    expect(elsewhere.stderr).toContain("holds the account of ops@example.com, not other@example.com");
    expect(readFileSync(out, "utf8")).toBe(saved);
    expect(statSync(out).mode & 0o777).toBe(0o600);

    const plan = await handoff(["accounts", "plan", "--email", "ops@example.com", "--plan", "builder"], env);
    expect(plan.status, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({ email: "ops@example.com", plan: "builder" });
    const unknown = await handoff(
      ["accounts", "plan", "--email", "nobody@example.com", "--plan", "team"],
      env,
    );
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("no account has the address nobody@example.com");
    const badPlan = await handoff(["accounts", "plan", "--email", "ops@example.com", "--plan", "gold"], env);
    expect(badPlan.status).toBe(1);
    expect(badPlan.stderr).toContain("--plan must be one of free, builder, team, scale, enterprise");
  }, 300_000);
});
