import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { randomPublicKey } from "../support/app.js";
import { freshPostgres, postgresServer, tempDir } from "../support/databases.js";
import { startS3Server, type TestS3Server } from "../support/s3-server.js";
import { freePort, ServerProcess } from "../support/server-process.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const START_TIMEOUT_MS = 480_000;

interface ComposeService {
  environment?: Record<string, string | null>;
  ports?: string[];
  depends_on?: Record<string, unknown>;
}

const compose = parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8")) as {
  services: Record<string, ComposeService>;
};

/** `${inside}`, as the compose file writes a variable. */
const composeVariable = (inside: string) => `\${${inside}}`;

/** Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?message}`, from `variables` (its .env and shell). */
function interpolate(value: string, variables: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, rest?: string) => {
    const set = variables[name];
    if (set) return set;
    if (kind === "?") throw new Error(`compose needs ${name}: ${rest}`);
    return kind === "-" ? (rest ?? "") : "";
  });
}

/**
 * docker-compose.yml as Compose runs it, without a container engine (none here): the handoff
 * service's own environment, interpolated as Compose would, with each other service's address
 * replaced by the local stand-in that plays it (an S3 server in this process for MinIO, the
 * machine's PostgreSQL when TEST_DATABASE_URL is set, else the embedded store; KurrentDB and Redis
 * are left out: none runs here). Everything else is the file's own setting.
 */
function handoffEnvironment(variables: Record<string, string>, stand: Record<string, string | null>) {
  const env: Record<string, string> = {};
  for (const [name, raw] of Object.entries(compose.services.handoff?.environment ?? {})) {
    let value = interpolate(raw ?? variables[name] ?? "", variables);
    for (const [address, local] of Object.entries(stand)) {
      if (!value.includes(address)) continue;
      value = local === null ? "" : value.replace(address, local);
    }
    if (value) env[name] = value;
  }
  return env;
}

describe("docker-compose.yml: the whole stack with one command, presigned URLs that work outside", () => {
  const data = tempDir("handoff-compose-");
  let s3: TestS3Server;
  let server: ServerProcess;
  let database: { url: string; drop(): Promise<void> } | null = null;
  let env: Record<string, string>;
  let publicS3: string;
  let apiKey: string;

  beforeAll(async () => {
    s3 = await startS3Server("handoff", { createBucket: false });
    database = postgresServer ? await freshPostgres(postgresServer) : null;
    const port = await freePort();
    const s3Port = new URL(s3.endpoint).port;
    // What the reader would put in .env: only the ports move (and s3rver's fixed key pair).
    const variables = {
      PUBLIC_BASE_URL: `http://localhost:${port}`,
      S3_PUBLIC_ENDPOINT: `http://localhost:${s3Port}`,
      MINIO_ROOT_USER: s3.credentials.accessKeyId,
      MINIO_ROOT_PASSWORD: s3.credentials.secretAccessKey,
    };
    publicS3 = variables.S3_PUBLIC_ENDPOINT;
    env = handoffEnvironment(variables, {
      "minio:9000": `127.0.0.1:${s3Port}`,
      "postgres://handoff:handoff@postgres:5432/handoff": database?.url ?? null,
      "kurrentdb://kurrentdb:2113?tls=false": null,
      "redis://redis:6379": null,
      "/var/lib/handoff": data.path,
    });
    server = await ServerProcess.start(
      { ...env, HOST: "127.0.0.1", PORT: String(port), ADMIN_TOKEN: "compose-admin-token-0123456789" },
      { readyTimeoutMs: START_TIMEOUT_MS },
    );
    const created = await fetch(`${server.baseUrl}/v1/admin/accounts`, {
      method: "POST",
      headers: { authorization: "Bearer compose-admin-token-0123456789", "content-type": "application/json" },
      body: JSON.stringify({ email: "compose@example.com", plan: "team" }),
    });
    apiKey = ((await created.json()) as { api_key: { api_key: string } }).api_key.api_key;
    for (const agent_id of ["alpha", "beta"]) {
      await fetch(`${server.baseUrl}/v1/agents/register`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ agent_id, public_key: randomPublicKey() }),
      });
    }
  }, START_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    await server?.kill();
    await s3?.stop();
    await database?.drop();
    data.remove();
  });

  it("needs no variable to start and names its settings for the public S3 endpoint and the bucket", () => {
    const text = readFileSync(join(ROOT, "docker-compose.yml"), "utf8");
    expect(text).not.toMatch(/\$\{\w+:\?/);
    const handoff = compose.services.handoff as ComposeService;
    expect(handoff.environment).toMatchObject({
      S3_ENDPOINT: "http://minio:9000",
      S3_PUBLIC_ENDPOINT: composeVariable("S3_PUBLIC_ENDPOINT:-http://localhost:9000"),
      S3_CREATE_BUCKET: "true",
    });
    expect(compose.services.minio?.ports).toContain("9000:9000");
    expect(compose.services.minio?.environment?.MINIO_API_CORS_ALLOW_ORIGIN).toBe(
      composeVariable("PUBLIC_BASE_URL:-http://localhost:8080"),
    );
    expect(Object.keys(handoff.depends_on ?? {}).sort()).toEqual(["kurrentdb", "minio", "postgres", "redis"]);
  });

  it("creates the bucket and its CORS rule on start", async () => {
    const preflight = await fetch(`${s3.endpoint}/handoff/any-key`, {
      method: "OPTIONS",
      headers: {
        origin: env.PUBLIC_BASE_URL as string,
        "access-control-request-method": "PUT",
        "access-control-request-headers": "content-type",
      },
    });
    expect(preflight.status).toBe(200);
    // s3rver answers a matched preflight with "*"; the rule itself is origin-bound (below).
    expect(preflight.headers.get("access-control-allow-methods")).toContain("PUT");
    const elsewhere = await fetch(`${s3.endpoint}/handoff/any-key`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "PUT" },
    });
    expect(elsewhere.status).toBe(403);
  });

  it("signs upload and download URLs for S3_PUBLIC_ENDPOINT, and both work from there", async () => {
    const bytes = randomBytes(100_000);
    const started = await fetch(`${server.baseUrl}/v1/transfers/presigned`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        mode: "agent-to-agent",
        sender: "alpha",
        recipient: "beta",
        files: [{ name: "report.bin", size: bytes.length }],
      }),
    });
    expect(started.status).toBe(201);
    const presigned = (await started.json()) as {
      id: string;
      upload_urls: { upload_url: string; method: string; headers: Record<string, string> }[];
    };
    const upload = presigned.upload_urls[0];
    if (!upload) throw new Error("no upload URL");
    expect(new URL(upload.upload_url).origin).toBe(publicS3);
    const put = await fetch(upload.upload_url, {
      method: upload.method,
      headers: { ...upload.headers, origin: env.PUBLIC_BASE_URL as string },
      body: bytes,
    });
    expect(put.status, await put.clone().text()).toBe(200);
    expect(put.headers.get("access-control-allow-origin")).toBe(env.PUBLIC_BASE_URL);
    const confirmed = await fetch(`${server.baseUrl}/v1/transfers/${presigned.id}/confirm`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(confirmed.status).toBe(200);

    const download = await fetch(`${server.baseUrl}/v1/transfers/${presigned.id}/download`, {
      headers: { authorization: `Bearer ${apiKey}`, "x-service-agent": "beta" },
    });
    const { files } = (await download.json()) as { files: { download_url: string }[] };
    const url = files[0]?.download_url as string;
    expect(new URL(url).origin).toBe(publicS3);
    const got = await fetch(url, { headers: { origin: env.PUBLIC_BASE_URL as string } });
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
  });
});
