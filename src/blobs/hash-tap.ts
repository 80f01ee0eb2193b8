import type { Hash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { STREAM_CHUNK } from "./byte-streams.js";

/** Passes bytes on unchanged while feeding them to a hash (an upload's fingerprint, a tus checksum). */
export class HashTap extends Transform {
  constructor(readonly hash: Hash) {
    super({ highWaterMark: STREAM_CHUNK });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    done(null, chunk);
  }
}
