import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RATE_LIMIT_WINDOW_MS } from "../../src/rate-limits/policy.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectError, startOfWindow } from "./helpers.js";
import { bytes, downloadOk, fetchLink, newParties, type Parties, sendTransfer } from "./transfer-helpers.js";

/** The value of one sample of a Prometheus text exposition; 0 when the series does not exist yet. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[4]);
  }
  return 0;
}

describe("GET /metrics", () => {
  let t: TestApp;
  let parties: Parties;

  const scrape = async () => {
    const res = await t.call("GET", "/metrics");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  beforeAll(async () => {
    t = await startTestApp();
    parties = await newParties(t, "scale");
  });
  afterAll(async () => {
    await t.close();
  });

  it("counts a created transfer by route pattern and status, its events, and the file bytes both ways", async () => {
    const size = 3000;
    const before = await scrape();
    const transfer = await sendTransfer(t, parties.apiKey, [{ name: "a.bin", data: bytes(size) }]);
    const link = (await downloadOk(t, parties.apiKey, transfer.id)).files[0]?.download_url ?? "";
    const file = await fetchLink(t, link);
    expect(file.statusCode).toBe(200);
    const after = await scrape();

    const created = { method: "POST", route: "/v1/transfers", status_code: "201" };
    const name = "handoff_http_request_duration_seconds_count";
    expect(sample(after, name, created) - sample(before, name, created)).toBe(1);
    const downloads = { method: "GET", route: "/v1/transfers/:id/download", status_code: "200" };
    expect(sample(after, name, downloads) - sample(before, name, downloads)).toBe(1);
    // The raw URL (with the transfer id) never becomes a label.
    expect(after).not.toContain(transfer.id);
    expect(sample(after, "handoff_events_appended_total")).toBeGreaterThan(
      sample(before, "handoff_events_appended_total"),
    );
    const grew = (metric: string) => sample(after, metric) - sample(before, metric);
    expect(grew("handoff_uploaded_bytes_total")).toBe(size);
    expect(grew("handoff_downloaded_bytes_total")).toBe(size);
  });

  it("labels unmatched URLs as one route", async () => {
    await t.call("GET", "/no/such/place-1");
    await t.call("GET", "/no/such/place-2");
    const text = await scrape();
    expect(
      sample(text, "handoff_http_request_duration_seconds_count", {
        method: "GET",
        route: "unmatched",
        status_code: "404",
      }),
    ).toBeGreaterThanOrEqual(2);
    expect(text).not.toContain("place-1");
  });

  it("counts rate-limit refusals by bucket", async () => {
    await startOfWindow(t, RATE_LIMIT_WINDOW_MS);
    const labels = { rule: "transfers.download" };
    const before = sample(await scrape(), "handoff_rate_limit_refusals_total", labels);
    for (let i = 0; i < 30; i++)
      await t.call("GET", "/v1/transfers/tr_missing/download", { key: parties.apiKey });
    expectError(
      await t.call("GET", "/v1/transfers/tr_missing/download", { key: parties.apiKey }),
      429,
      "RATE_LIMITED",
    );
    const after = sample(await scrape(), "handoff_rate_limit_refusals_total", labels);
    expect(after - before).toBe(1);
  });

  it("reports the projection lag, zero once the read models have caught up", async () => {
    await sendTransfer(t, parties.apiKey);
    await t.service.engine.waitFor(await t.service.store.headPosition(), 5000);
    const text = await scrape();
    expect(text).toContain("# TYPE handoff_projection_lag_events gauge");
    expect(text).toContain("# TYPE handoff_projection_lag_seconds gauge");
    expect(sample(text, "handoff_projection_lag_events")).toBe(0);
    expect(sample(text, "handoff_projection_lag_seconds")).toBe(0);
  });
});

describe("GET /metrics with METRICS_TOKEN", () => {
  let t: TestApp;
  const token = "metrics-token-0123456789abcdef";

  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN: token } });
  });
  afterAll(async () => {
    await t.close();
  });

  it("answers only with the token", async () => {
    expectError(await t.call("GET", "/metrics"), 401, "UNAUTHORIZED");
    expectError(await t.call("GET", "/metrics", { key: `${token}x` }), 401, "UNAUTHORIZED");
    const res = await t.call("GET", "/metrics", { key: token });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("handoff_http_request_duration_seconds");
  });
});

describe("request ids", () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("echoes a well-formed X-Request-Id, errors included", async () => {
    const ok = await t.call("GET", "/healthz", { headers: { "x-request-id": "caller-42.a" } });
    expect(ok.headers["x-request-id"]).toBe("caller-42.a");
    const refused = await t.call("GET", "/v1/transfers", { headers: { "x-request-id": "caller-43" } });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers["x-request-id"]).toBe("caller-43");
  });

  it("gives each request a fresh id when the caller sends none or a malformed one", async () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const first = await t.call("GET", "/healthz");
    const second = await t.call("GET", "/healthz");
    expect(first.headers["x-request-id"]).toMatch(uuid);
    expect(second.headers["x-request-id"]).toMatch(uuid);
    expect(first.headers["x-request-id"]).not.toBe(second.headers["x-request-id"]);
    for (const bad of ["x".repeat(129), "has space", "new\tline"]) {
      const res = await t.call("GET", "/healthz", { headers: { "x-request-id": bad } });
      expect(res.headers["x-request-id"]).toMatch(uuid);
    }
  });
});
