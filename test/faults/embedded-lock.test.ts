import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN } from "../support/app.js";
import { tempDir } from "../support/databases.js";
import { runCli, ServerProcess } from "../support/server-process.js";
import { call, isCut } from "./support.js";

/**
 * Issue 20, point 2: one process owns an embedded data folder. A second `serve`, or a server-side
 * command, on a folder a running server holds is refused with a line naming that server, never
 * left to write a database of its own; `accounts create` with ADMIN_TOKEN goes through the server.
 */
describe("a busy embedded data folder", () => {
  const dir = tempDir("handoff-faults-lock-");
  let server: ServerProcess | null = null;
  afterAll(async () => {
    await server?.kill("SIGTERM");
    dir.remove();
  });

  it("refuses a second process and creates accounts through the running server", async () => {
    const env = { DATA_DIR: dir.path, ADMIN_TOKEN };
    server = await ServerProcess.start(env, { readyTimeoutMs: 240_000 });
    const pid = server.child.pid;

    const second = runCli(["serve"], { ...env, PORT: "0" });
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`in use by handoff serve (pid ${pid}, ${server.baseUrl}`);

    for (const command of [
      ["projections", "rebuild"],
      ["replay", "--until", "0"],
    ]) {
      const refused = runCli(command, { DATA_DIR: dir.path });
      expect(refused.status, command.join(" ")).toBe(1);
      expect(refused.stderr).toContain(`in use by handoff serve (pid ${pid}`);
    }

    // Without the server's ADMIN_TOKEN the command cannot ask it: refused, nothing written.
    const withoutToken = runCli(["accounts", "create", "--email", "no-token@example.com"], {
      DATA_DIR: dir.path,
      ADMIN_TOKEN: "",
    });
    expect(withoutToken.status).toBe(1);
    expect(withoutToken.stderr).toContain("ADMIN_TOKEN");

    const created = runCli(["accounts", "create", "--email", "beside@example.com"], env);
    expect(created.stderr).toBe("");
    expect(created.status).toBe(0);
    const { account, api_key } = JSON.parse(created.stdout);
    expect(account.email).toBe("beside@example.com");
    // The key works on the running server at once: the account is in its store, not a copy's.
    const me = await call(server.baseUrl, "GET", "/v1/agents", api_key.api_key);
    expect(isCut(me) ? me.cut : me.status).toBe(200);
    const again = runCli(["accounts", "create", "--email", "beside@example.com"], env);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("409");
  }, 400_000);
});
