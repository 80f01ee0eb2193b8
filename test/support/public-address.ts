import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./databases.js";

/**
 * An address of this machine that looks public: on a veth interface of the test's own, in 11.0.0.0/8
 * (an ordinary, routable range; the machine's network is closed, so nothing outside is reached).
 * A webhook receiver listening there can be reached by a service that runs without
 * WEBHOOKS_ALLOW_PRIVATE, through the very code path production uses. Needs root and iproute2.
 */
export interface PublicLookingAddress {
  address: string;
  /** A certificate for `https://{address}` (its own issuer) and its key, and a file holding it for NODE_EXTRA_CA_CERTS. */
  tls: { key: string; cert: string; certFile: string };
  remove(): void;
}

const run = (command: string, args: string[]) => {
  const result = spawnSync(command, args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${result.stderr || result.error}`);
};

/** The address, or why this machine cannot give one (the test is then skipped with that reason). */
export function publicLookingAddress(): PublicLookingAddress | string {
  const [b, c, d] = [...randomBytes(3)].map((byte) => (byte % 254) + 1);
  const address = `11.${b}.${c}.${d}`;
  const link = `hx${randomBytes(4).toString("hex")}`;
  const dir = tempDir("handoff-public-address-");
  try {
    run("ip", ["link", "add", link, "type", "veth", "peer", "name", `${link}p`]);
  } catch (error) {
    dir.remove();
    return `no veth interface can be made here (root and iproute2 needed): ${(error as Error).message.trim()}`;
  }
  const remove = () => {
    spawnSync("ip", ["link", "del", link]);
    dir.remove();
  };
  try {
    run("ip", ["addr", "add", `${address}/32`, "dev", link]);
    run("ip", ["link", "set", link, "up"]);
    run("ip", ["link", "set", `${link}p`, "up"]);
    const [keyFile, certFile] = [join(dir.path, "key.pem"), join(dir.path, "cert.pem")];
    run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-subj",
      `/CN=${address}`,
      "-addext",
      `subjectAltName=IP:${address}`,
      "-days",
      "1",
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ]);
    const tls = { key: readFileSync(keyFile, "utf8"), cert: readFileSync(certFile, "utf8"), certFile };
    return { address, tls, remove };
  } catch (error) {
    remove();
    throw error;
  }
}
