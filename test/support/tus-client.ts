import { request } from "node:http";

const TUS = { "tus-resumable": "1.0.0" };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What a tus client met on the way: the Retry-After of each 423. */
export interface TusTrip {
  locked: string[];
}

/**
 * A tus client's loop, one PATCH of at most `chunk` bytes per request (`bytes(start, end)` gives
 * them): it asks HEAD where the upload is and sends from there; a cut connection, a 409 or a 423
 * (after its Retry-After) makes it ask again. Resolves once the upload holds `length` bytes; fails
 * after `maxSetbacks` (default 100) requests in a row that moved the upload no further.
 */
export async function tusUpload(
  url: string,
  length: number,
  bytes: (start: number, end: number) => Buffer,
  options: { chunk: number; trip?: TusTrip; maxSetbacks?: number },
): Promise<void> {
  const wait = async (answer: Response | null) => {
    if (answer?.status === 423) options.trip?.locked.push(answer.headers.get("retry-after") ?? "");
    await sleep(Number(answer?.headers.get("retry-after") ?? 0.2) * 1000);
  };
  let reached = -1;
  for (let setbacks = 0; setbacks < (options.maxSetbacks ?? 100); setbacks++) {
    const head = await fetch(url, { method: "HEAD", headers: TUS }).catch(() => null);
    if (head?.status !== 200) {
      if (head && head.status !== 423) throw new Error(`HEAD: ${head.status}`);
      await wait(head);
      continue;
    }
    const offset = Number(head.headers.get("upload-offset"));
    if (offset === length) return;
    if (offset > reached) {
      reached = offset;
      setbacks = 0;
    }
    const patch = await fetch(url, {
      method: "PATCH",
      headers: { ...TUS, "content-type": "application/offset+octet-stream", "upload-offset": String(offset) },
      body: bytes(offset, Math.min(length, offset + options.chunk)),
    }).catch(() => null);
    if (patch?.status === 423) await wait(patch);
    else if (patch && patch.status !== 204 && patch.status !== 409)
      throw new Error(`PATCH: ${patch.status} ${await patch.text()}`);
  }
  throw new Error("the upload did not complete");
}

/** A PATCH whose first `sent` bytes go out while the request stays open; `ended` gives its status or "cut". */
export function openPatch(url: string, offset: number, body: Buffer, sent: number) {
  const req = request(url, {
    method: "PATCH",
    headers: {
      ...TUS,
      "content-type": "application/offset+octet-stream",
      "upload-offset": String(offset),
      "content-length": String(body.length),
    },
  });
  const ended = new Promise<number | "cut">((resolve) => {
    req.on("error", () => resolve("cut"));
    req.on("response", (answer) => {
      answer.resume();
      resolve(answer.statusCode ?? 0);
    });
  });
  req.write(body.subarray(0, sent));
  return { ended, rest: () => req.end(body.subarray(sent)) };
}

/** The offset the upload's HEAD answers. */
export async function tusOffset(url: string): Promise<number> {
  const head = await fetch(url, { method: "HEAD", headers: TUS });
  if (head.status !== 200) throw new Error(`HEAD: ${head.status}`);
  return Number(head.headers.get("upload-offset"));
}
