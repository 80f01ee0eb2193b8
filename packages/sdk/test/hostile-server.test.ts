import { once } from "node:events";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createIdentity, HandoffClient, HandoffTransferError } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { entries, tempDir } from "./support.js";

/**
 * The real service never hands out such names or lists (it refuses paths on upload), so these
 * cases need a server that lies: a local stub answering the two requests receive makes first.
 */
describe("receive against a server that lies about file names", () => {
  const downloads: string[] = [];
  let listed: string[] = [];
  let served: string[] = [];
  const listedEncrypted = false;
  let stub: Server;
  let baseUrl = "";
  const dir = tempDir();

  beforeAll(async () => {
    stub = createServer((req, res) => {
      const json = (body: unknown) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.url === "/blob") return res.end("x");
      if (req.url?.endsWith("/download")) {
        downloads.push(req.url);
        return json({
          id: "tr_lie",
          files: served.map((name) => ({
            file_name: name,
            download_url: `${baseUrl}/blob`,
            size: 1,
            encryption_iv: null,
          })),
          is_encrypted: false,
          encrypted_key: null,
          sender_signature: null,
        });
      }
      return json({
        id: "tr_lie",
        mode: "agent-to-agent",
        sender: "alice",
        recipient: "bob",
        is_encrypted: listedEncrypted,
        files: listed.map((name) => ({ name, size: 1, type: "text/plain" })),
      });
    });
    stub.listen(0, "127.0.0.1");
    await once(stub, "listening");
    baseUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    stub?.close();
    dir.cleanup();
  });

  const client = () => new HandoffClient({ baseUrl, apiKey: "hnd_test", identity: createIdentity("bob") });

  it.each([
    "../escape.txt",
    "/etc/passwd",
    "sub/../../escape.txt",
    "sub//x.txt",
    "sub/./x.txt",
    "sub/",
    "back\\slash.txt",
    "c1\u0085control.txt",
    "..",
    "",
  ])("refuses the listed name %j before the download is counted", async (name) => {
    listed = [name];
    served = [name];
    downloads.length = 0;
    const outDir = join(dir.path, "names");
    const error = await client()
      .receive("tr_lie", { outDir })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HandoffTransferError);
    expect(error).toMatchObject({ code: "UNSAFE_FILE_NAME", transferId: "tr_lie" });
    expect(downloads).toEqual([]);
    expect(entries(outDir)).toEqual([]);
  });

  it("writes a folder's file inside outDir, and never follows a link planted where a folder would be", async () => {
    const outDir = join(dir.path, "folders");
    listed = ["sub/deeper/x.txt"];
    served = listed;
    const received = await client().receive("tr_lie", { outDir, shield: "off" });
    expect(received.files[0]?.path).toBe(join(outDir, "sub", "deeper", "x.txt"));
    expect(readFileSync(join(outDir, "sub", "deeper", "x.txt"), "utf8")).toBe("x");

    const outside = join(dir.path, "outside");
    mkdirSync(outside);
    symlinkSync(outside, join(outDir, "link"));
    listed = ["link/x.txt"];
    served = listed;
    const error = await client()
      .receive("tr_lie", { outDir, shield: "off" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "UNSAFE_FILE_NAME" });
    expect(entries(outside)).toEqual([]);
  });

  it("refuses a download that serves other files than the transfer lists", async () => {
    listed = ["report.txt"];
    served = ["other.txt"];
    const outDir = join(dir.path, "lists");
    await expect(client().receive("tr_lie", { outDir })).rejects.toMatchObject({
      code: "FILE_LIST_MISMATCH",
    });
    expect(entries(outDir)).toEqual([]);
  });
});
