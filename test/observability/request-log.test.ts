import { Writable } from "node:stream";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { requestLogOptions } from "../../src/observability/request-log.js";

/** A fastify app with the service's logger settings, its lines kept in `lines`. */
function loggedApp() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const options = requestLogOptions(true);
  const app = Fastify({ ...options, logger: { ...(options.logger as object), stream } });
  return { app, lines };
}

describe("the request log", () => {
  it("logs a request without its headers, and an error with its secret-looking fields censored", async () => {
    const { app, lines } = loggedApp();
    app.get("/v1/boom", async () => {
      throw Object.assign(new Error("upstream refused"), {
        api_key: "hk_live_secret",
        connection_token: "hct_secret",
        password: "hunter22",
        code: "E_UPSTREAM",
      });
    });
    app.get("/v1/files/:token", async () => ({ ok: true }));
    const boom = await app.inject({ url: "/v1/boom", headers: { authorization: "Bearer hk_live_header" } });
    expect(boom.statusCode).toBe(500);
    await app.inject({ url: "/v1/files/signed-secret?token=also-secret" });
    await app.close();

    const text = JSON.stringify(lines);
    for (const secret of [
      "hk_live_secret",
      "hct_secret",
      "hunter22",
      "hk_live_header",
      "signed-secret",
      "also-secret",
    ])
      expect(text).not.toContain(secret);
    const errored = lines.find((line) => line.err !== undefined) as { err: Record<string, unknown> };
    expect(errored.err).toMatchObject({
      message: "upstream refused",
      code: "E_UPSTREAM",
      api_key: "[redacted]",
      connection_token: "[redacted]",
      password: "[redacted]",
    });
    const completed = lines.findLast((line) => line.msg === "request completed") as {
      req: Record<string, unknown>;
    };
    expect(completed.req).toEqual({
      method: "GET",
      url: "/v1/files/[redacted]?token=%5Bredacted%5D",
      host: "localhost:80",
      remoteAddress: "127.0.0.1",
    });
  });
});
