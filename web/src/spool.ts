import { createEncryptStream } from "@handoff/sdk/crypto";

/** An encrypted copy of one file, ready to upload, and how to throw it away afterwards. */
export interface Spooled {
  encryptionIv: string;
  blob: Blob;
  discard(): Promise<void>;
}

/**
 * Encrypts a file as the records of decisions 5.3, reading it as a stream. Browsers send a
 * streamed request body only over HTTP/2, so the ciphertext is spooled first: into the origin
 * private file system where the browser has one (on disk: flat memory at any size, and the
 * upload streams from that file), else into a Blob, which the browser may keep in memory.
 */
export async function encryptFile(
  file: File,
  contentKey: Uint8Array,
  onProgress: (bytes: number) => void,
): Promise<Spooled> {
  const { encryptionIv, stream } = createEncryptStream(contentKey);
  let read = 0;
  const plain = file.stream().pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        read += chunk.length;
        onProgress(read);
        controller.enqueue(chunk);
      },
    }),
  );
  const encrypted = plain.pipeThrough(stream);
  const directory = await privateDirectory();
  if (!directory) {
    const blob = await new Response(encrypted).blob();
    return { encryptionIv, blob, discard: async () => {} };
  }
  const name = `upload-${crypto.randomUUID()}.hoe`;
  const handle = await directory.getFileHandle(name, { create: true });
  const discard = () => directory.removeEntry(name).catch(() => {});
  try {
    await encrypted.pipeTo(await handle.createWritable());
    return { encryptionIv, blob: await handle.getFile(), discard };
  } catch (error) {
    await discard();
    throw error;
  }
}

async function privateDirectory(): Promise<FileSystemDirectoryHandle | null> {
  try {
    if (!navigator.storage?.getDirectory || !("createWritable" in FileSystemFileHandle.prototype))
      return null;
    return await navigator.storage.getDirectory();
  } catch {
    return null;
  }
}
